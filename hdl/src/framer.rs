//! `framer` (in progress on a branch).
