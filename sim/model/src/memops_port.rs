//! `memops_port`'s reference model (in progress on a branch).
