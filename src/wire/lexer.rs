//! The JSON lexer under the hand-written readers and writers: where a
//! value ends (`json_extent`), one pass over an object's members
//! (`json_scan`, `validated_walk`), Go's any-case key matching
//! (`any_case`), and string escaping (`json_string`). It knows nothing of
//! Kubernetes; the readers in `wire` use it.

pub(crate) mod any_case;
pub(crate) mod json_extent;
pub(crate) mod json_scan;
pub(crate) mod json_string;
pub(crate) mod validated_walk;
