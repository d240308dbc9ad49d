//! The host side: host events ([`event`]), the stages between a source and
//! the translation layer ([`stages`]: DISCARD policy, write classifier,
//! priority), the page requests they produce, and their submission in
//! counting mode ([`submit`]). The pblk-like host-level FTL lives here too.

pub mod classify;
pub mod discard;
pub mod event;
pub mod pblk;
pub mod stages;

use crate::ftl::{FtlError, TranslationLayer};
use crate::units::{Lpn, StreamId};
use serde::{Deserialize, Serialize};

/// What a request asks the device to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    Write,
    /// DISCARD/TRIM: the host no longer needs the data.
    Trim,
    /// Make every write acknowledged so far durable (`pages` is 0).
    Flush,
}

/// A host request over a range of logical pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub op: Op,
    pub start: Lpn,
    pub pages: u32,
    pub stream: StreamId,
}

/// Applies one request to a translation layer, page by page, without timing.
#[inline]
pub fn submit<T: TranslationLayer + ?Sized>(ftl: &mut T, request: &Request) -> Result<(), FtlError> {
    ftl.count_request();
    let pages = request.start.0..request.start.0 + request.pages;
    match request.op {
        Op::Write => pages.into_iter().try_for_each(|lpn| ftl.write(Lpn(lpn), request.stream)),
        Op::Read => pages.into_iter().try_for_each(|lpn| ftl.read(Lpn(lpn))),
        Op::Trim => ftl.trim(request.start, request.pages),
        Op::Flush => ftl.flush(),
    }
}
