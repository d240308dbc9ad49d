//! The host side: requests as a host issues them, and their submission to the
//! device in counting mode. Later stages (DISCARD scheduling, admission
//! control) sit between a workload and [`submit`].

pub mod classify;
pub mod discard;
pub mod pblk;

use crate::ftl::{FtlError, PageFtl};
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
}

/// A host request over a range of logical pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub op: Op,
    pub start: Lpn,
    pub pages: u32,
    pub stream: StreamId,
}

/// Applies one request to the FTL, page by page, without timing.
pub fn submit(ftl: &mut PageFtl, request: &Request) -> Result<(), FtlError> {
    ftl.count_request();
    let pages = request.start.0..request.start.0 + request.pages;
    match request.op {
        Op::Write => pages.into_iter().try_for_each(|lpn| ftl.write(Lpn(lpn), request.stream).map(drop)),
        Op::Read => pages.into_iter().try_for_each(|lpn| ftl.read(Lpn(lpn)).map(drop)),
        Op::Trim => ftl.trim(request.start, request.pages),
    }
}
