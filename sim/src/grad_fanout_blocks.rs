//! Port glue of `grad_fanout` (in progress on a branch).
