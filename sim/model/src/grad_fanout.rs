//! `grad_fanout`'s reference model (in progress on a branch).
