//! `frame_check` (in progress on a branch).
