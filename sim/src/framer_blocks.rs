//! Port glue of `framer` (in progress on a branch).
