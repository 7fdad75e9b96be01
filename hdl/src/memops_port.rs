//! `memops_port` (in progress on a branch).
