//! `grad_fanout` (in progress on a branch).
