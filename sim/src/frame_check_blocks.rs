//! Port glue of `frame_check` (in progress on a branch).
