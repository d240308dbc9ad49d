//! What a server exports: the one export's name and description, and the limits its clients are
//! held to.

use crate::limits::Limits;

/// What a server exports: the one export's name and description (clients may also ask for the
/// default export, ""), and the limits its clients are held to.
#[derive(Clone, Debug)]
pub struct Export {
    /// The export's name, as clients give it (`nbd+unix:///NAME?socket=...`).
    pub name: String,
    /// The text NBD_INFO_DESCRIPTION returns.
    pub description: String,
    pub limits: Limits,
}

impl Export {
    /// An export named `name` with the default [`Limits`].
    #[must_use]
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Export {
        Export { name: name.into(), description: description.into(), limits: Limits::default() }
    }
}
