//! `frame_check`'s reference model (in progress on a branch).
