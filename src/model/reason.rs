//! [`Reason`]: why a node failed, as the policies say it and as the
//! extender's filter answer carries it (`FailedNodes`). It lives here, the
//! one layer both `policy` and `wire` use.

use std::fmt;
use std::sync::Arc;

/// A failure's text: a fixed text is borrowed, not copied. Thousands of
/// nodes of a 5,000-node filter fail with the same fixed text (NodeAffinity,
/// an unknown node); allocating it per node, and freeing it after the
/// answer, was a visible share of such a request, and counting references
/// to one shared copy from both cores would make them fight over it.
#[derive(Debug, Clone)]
pub enum Reason {
    Fixed(&'static str),
    Shared(Arc<str>),
}

impl std::ops::Deref for Reason {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            Self::Fixed(s) => s,
            Self::Shared(s) => s,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl PartialEq for Reason {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Reason {}

impl From<&'static str> for Reason {
    fn from(s: &'static str) -> Self {
        Self::Fixed(s)
    }
}

impl From<Arc<str>> for Reason {
    fn from(s: Arc<str>) -> Self {
        Self::Shared(s)
    }
}

impl From<String> for Reason {
    fn from(s: String) -> Self {
        Self::Shared(s.into())
    }
}
