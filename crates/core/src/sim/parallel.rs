//! `--threads N`: a counting run on every core, with the single-threaded
//! run's results. Under static allocation (`ftl.allocation = "static"`)
//! logical page `lpn` lives in unit `lpn mod units` for its whole life, and
//! garbage collection copies stay in the victim's unit, so each unit is an
//! FTL of its own: its free blocks, open blocks, victim index and wear are
//! its own, and what it does depends only on the pages written to it, in
//! their order. The units are dealt out to `N` partitions (unit `u` to
//! partition `u mod N`), each a [`PageFtl`] over its units alone
//! ([`Partitioned`]); the driver's thread generates the requests and splits
//! every one into the pages of each partition, in order, and each partition
//! runs on a thread of its own. (The driver keeps no partition: its share
//! of the work would wait for its generating, while a thread of its own
//! runs whenever a core is free.) Counters add up; the erase counts of each
//! partition's blocks go back to their places on the device.
//!
//! What depends on the interleaving of the units is only what reads the
//! device-wide counters mid-phase: the WAF series and the precondition's
//! steady-state rule (a window closes, or the budget is spent, after a host
//! request that writes a known number of pages). Where they would look,
//! known from the request stream alone ([`Watch::due`]), the driver stops
//! every partition at that request and shows them the sum, so they see
//! what the single-threaded run sees there, and stop the phase at the same
//! request.
//!
//! A unit is not independent, and `--threads` refuses the run, when it
//! shares anything with the others: a random victim choice (`random`,
//! `d-choices` draw from one generator in the order the units collect),
//! `cost-benefit` (a block's age is counted in the device's host writes),
//! the DFTL map cache (`ftl.discard = "dftl"`, one cache for all units),
//! round-robin allocation (the next unit depends on every write before),
//! per-job accounting (`[[job]]`), and the timing model (one clock and the
//! shared channels order every operation).

use super::feed::{at_event, EventCount, Feed, LOOKAHEAD};
use super::watch::Watch;
use super::{Ahead, Phase, Progress, Queued, SimError};
use crate::config::{Config, ConfigError};
use crate::device::{DeviceConfig, Geometry};
use crate::ftl::{
    Allocation, DiscardHandling, FlashOp, FtlError, InvariantError, LayerKind, PageFtl, TranslationLayer, VictimPolicy,
};
use crate::host::stages::HostStages;
use crate::host::{Op, Request};
use crate::metrics::Counters;
use crate::units::{Lpn, StreamId, UnitId};
use std::any::Any;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;

/// Most worker threads `--threads` takes.
pub const THREADS_MAX: usize = 256;

/// Host requests the driver splits before it hands each partition its share:
/// large batches (and a channel a few batches deep) keep the partitions busy
/// while the driver generates; 4,096 two deep left them waiting (1.65x against
/// 1.95x on two cores, docs/configuration.md).
const BATCH_REQUESTS: usize = 65536;

/// Batches a partition's channel holds before the driver waits for it.
const HANDOFF_BATCHES: usize = 4;

/// Refuses, naming the key, a run whose units are not independent FTLs
/// (see the module's header), or `threads` the units cannot be dealt to.
pub fn check_threads(config: &Config, threads: usize) -> Result<(), ConfigError> {
    let why = |key: &str, reason: &str| Err(ConfigError::new(key, format!("--threads {threads} {reason}")));
    if !(1..=THREADS_MAX).contains(&threads) {
        return Err(ConfigError::new("--threads", format!("{threads} is not between 1 and {THREADS_MAX}")));
    }
    if threads == 1 {
        return Ok(());
    }
    if config.ftl.kind != LayerKind::Page {
        return why("ftl.kind", "needs the page-mapped FTL (ftl.kind = \"page\")");
    }
    if config.ftl.allocation != Allocation::Static {
        return why(
            "ftl.allocation",
            "needs static allocation (ftl.allocation = \"static\"): under round-robin allocation the unit a page \
             goes to depends on every write before it, so the units are not independent",
        );
    }
    if !matches!(config.ftl.gc_policy, VictimPolicy::Greedy | VictimPolicy::Fifo) {
        return why(
            "ftl.gc_policy",
            "needs a victim policy that looks at one unit only (greedy or fifo): random and d-choices draw from \
             one generator for all units, cost-benefit ages blocks by the device's host writes",
        );
    }
    if config.ftl.discard == DiscardHandling::Dftl {
        return why("ftl.discard", "cannot split the DFTL mode's one map cache (ftl.discard = \"dftl\") between units");
    }
    if !config.jobs.is_empty() {
        return why("job", "runs the [workload] only: per-job accounting follows the order of every request");
    }
    let units = config.validate()?.units();
    if !usize::try_from(units).is_ok_and(|units| units.is_multiple_of(threads)) {
        return why("--threads", &format!("must divide the {units} parallel units"));
    }
    Ok(())
}

/// Which partition owns a logical page, and where it lies in that
/// partition's own logical space: unit `u` goes to partition `u mod N`, as
/// its local unit `u div N`, so a partition's pages keep their order and a
/// run of host pages is a run of local pages in each partition.
#[derive(Clone, Copy, Debug)]
struct Partition {
    threads: u32,
    units: u32,
}

impl Partition {
    fn owner(self, lpn: u32) -> usize {
        ((lpn % self.units) % self.threads) as usize
    }

    /// Logical pages below `end` that `part` owns: the local page number of
    /// the first page at or past `end` it owns.
    fn owned_below(self, part: u32, end: u64) -> u64 {
        let (rounds, rest) = (end / u64::from(self.units), end % u64::from(self.units));
        let in_rest = (rest + u64::from(self.threads) - 1).saturating_sub(u64::from(part)) / u64::from(self.threads);
        rounds * u64::from(self.units / self.threads) + in_rest
    }

    /// `part`'s share of `pages` host pages from `start`, in its local pages.
    fn share(self, part: u32, start: u32, pages: u32) -> (Lpn, u32) {
        let first = self.owned_below(part, u64::from(start));
        let end = self.owned_below(part, u64::from(start) + u64::from(pages));
        // Both lie within the device's logical pages (a u32).
        #[allow(clippy::cast_possible_truncation)]
        (Lpn(first as u32), (end - first) as u32)
    }

    /// The device-wide block of `part`'s local block `block`.
    fn device_block(self, part: u32, block: u32, blocks_per_plane: u32) -> usize {
        let (unit, offset) = (block / blocks_per_plane, block % blocks_per_plane);
        ((part + unit * self.threads) * blocks_per_plane + offset) as usize
    }
}

/// A page-mapped FTL under static allocation as `N` independent
/// partitions of its units (see the module's header). Its counters and
/// erase counts are the device's, fresh after every call and phase.
#[derive(Debug, Clone)]
pub struct Partitioned {
    geometry: Geometry,
    partition: Partition,
    parts: Vec<PageFtl>,
    /// Host requests, counted here: a request split between partitions is one.
    requests: u64,
    counters: Counters,
    erase_counts: Vec<u32>,
}

impl Partitioned {
    pub(super) fn new(geometry: &Geometry, config: &Config, threads: usize) -> Result<Self, ConfigError> {
        let threads = u32::try_from(threads).map_err(|_| ConfigError::new("--threads", "too many"))?;
        let partition = Partition { threads, units: geometry.units() };
        let parts = (0..threads)
            .map(|part| {
                let logical_pages = partition.owned_below(part, u64::from(geometry.logical_pages));
                let device = DeviceConfig {
                    channels: geometry.units() / threads,
                    chips_per_channel: 1,
                    dies_per_chip: 1,
                    planes_per_die: 1,
                    blocks_per_plane: geometry.blocks_per_plane,
                    pages_per_block: geometry.pages_per_block,
                    page_size: geometry.page_size,
                    over_provisioning: None,
                    logical_pages: Some(logical_pages),
                    pe_cycles: geometry.pe_cycles,
                };
                PageFtl::new(&Geometry::from_config(&device)?, &config.ftl, config.seed)
            })
            .collect::<Result<_, _>>()?;
        let mut layer = Self {
            geometry: *geometry,
            partition,
            parts,
            requests: 0,
            counters: Counters::new(config.ftl.streams as usize),
            erase_counts: vec![0; geometry.blocks() as usize],
        };
        layer.gather();
        Ok(layer)
    }

    /// Sums the partitions' counters and puts their erase counts in place.
    fn gather(&mut self) {
        self.counters = sum_counters(self.requests, self.parts.iter().map(PageFtl::counters));
        let blocks_per_plane = self.geometry.blocks_per_plane;
        for (part, ftl) in (0..).zip(&self.parts) {
            for (block, &erases) in (0..).zip(ftl.flash().erase_counts()) {
                self.erase_counts[self.partition.device_block(part, block, blocks_per_plane)] = erases;
            }
        }
    }

    /// The partition owning `lpn` and the page there.
    fn locate(&self, lpn: Lpn) -> Result<(usize, Lpn), FtlError> {
        if lpn.0 >= self.geometry.logical_pages {
            return Err(FtlError::LpnOutOfRange { lpn: u64::from(lpn.0), logical_pages: self.geometry.logical_pages });
        }
        let part = self.partition.owner(lpn.0);
        Ok((part, self.partition.share(part as u32, lpn.0, 1).0))
    }

    /// Runs `call` on one partition, then gathers.
    fn on_part<R>(&mut self, part: usize, call: impl FnOnce(&mut PageFtl) -> R) -> R {
        let result = call(&mut self.parts[part]);
        self.gather();
        result
    }
}

/// The device's counters: the partitions' added up, and `requests`.
fn sum_counters<'a>(requests: u64, parts: impl IntoIterator<Item = &'a Counters>) -> Counters {
    let mut total = Counters::default();
    for counters in parts {
        if total.stream_host_pages_written.is_empty() {
            total.stream_host_pages_written = vec![0; counters.stream_host_pages_written.len()];
        }
        for (sum, count) in [
            (&mut total.host_pages_written, counters.host_pages_written),
            (&mut total.host_pages_read, counters.host_pages_read),
            (&mut total.host_pages_trimmed, counters.host_pages_trimmed),
            (&mut total.unmapped_reads, counters.unmapped_reads),
            (&mut total.flash_pages_programmed, counters.flash_pages_programmed),
            (&mut total.flash_pages_read, counters.flash_pages_read),
            (&mut total.gc_page_copies, counters.gc_page_copies),
            (&mut total.erases, counters.erases),
            (&mut total.translation_pages_written, counters.translation_pages_written),
            (&mut total.translation_pages_read, counters.translation_pages_read),
            (&mut total.translation_gc_copies, counters.translation_gc_copies),
            (&mut total.map_cache_hits, counters.map_cache_hits),
            (&mut total.map_cache_misses, counters.map_cache_misses),
        ] {
            *sum += count;
        }
        for (sum, count) in total.stream_host_pages_written.iter_mut().zip(&counters.stream_host_pages_written) {
            *sum += count;
        }
    }
    total.requests = requests;
    total
}

/// The layer one request at a time, partition by partition (the threaded
/// driver, [`drive`], goes around it; these serve any other caller).
impl TranslationLayer for Partitioned {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }
    fn counters(&self) -> &Counters {
        &self.counters
    }
    fn erase_counts(&self) -> &[u32] {
        &self.erase_counts
    }
    fn memory_bytes(&self) -> usize {
        self.parts.iter().map(PageFtl::memory_bytes).sum()
    }
    fn count_request(&mut self) {
        self.requests += 1;
        self.counters.requests = self.requests;
    }
    fn write(&mut self, lpn: Lpn, stream: StreamId) -> Result<(), FtlError> {
        let (part, local) = self.locate(lpn)?;
        self.on_part(part, |ftl| ftl.write(local, stream).map(drop))
    }
    fn read(&mut self, lpn: Lpn) -> Result<(), FtlError> {
        let (part, local) = self.locate(lpn)?;
        self.on_part(part, |ftl| ftl.read(local).map(drop))
    }
    fn trim(&mut self, first: Lpn, pages: u32) -> Result<(), FtlError> {
        if pages == 0 {
            return Ok(());
        }
        self.locate(Lpn(first.0.saturating_add(pages - 1)))?;
        for part in 0..self.parts.len() {
            let (start, pages) = self.partition.share(part as u32, first.0, pages);
            self.on_part(part, |ftl| ftl.trim(start, pages))?;
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), FtlError> {
        Ok(())
    }
    fn is_mapped(&self, lpn: Lpn) -> bool {
        self.locate(lpn).is_ok_and(|(part, local)| self.parts[part].lookup(local).is_some())
    }
    fn free_blocks(&self, unit: UnitId) -> u32 {
        let threads = self.partition.threads;
        self.parts[(unit.0 % threads) as usize].free_blocks(UnitId(unit.0 / threads))
    }
    fn collect_one(&mut self, unit: UnitId) -> Result<bool, FtlError> {
        let threads = self.partition.threads;
        self.on_part((unit.0 % threads) as usize, |ftl| ftl.collect_one(UnitId(unit.0 / threads)))
    }
    /// Counting mode only: there is no one order of the partitions' operations to record.
    fn set_recording(&mut self, _: bool) {}
    fn recorded(&self) -> &[FlashOp] {
        &[]
    }
    fn clear_recorded(&mut self) {}
    fn check_invariants(&self) -> Result<(), InvariantError> {
        self.parts.iter().try_for_each(TranslationLayer::check_invariants)
    }
}

/// What a partition's thread is sent.
enum Message {
    /// Requests in the partition's own pages, each with its event's number.
    Requests(Vec<(Request, u64)>),
    /// Reply with the partition's counters.
    Counters,
}

/// What a partition's thread answers to [`Message::Counters`]: its
/// counters, or the first request it failed (its event, the error).
type Reply = Result<Counters, (u64, FtlError)>;

/// The counting loop on threads: [`super::drive`] for a [`Partitioned`]
/// layer, which it hands here. Requests come from `feed` as there; each is
/// split between the partitions, which apply their shares on their own
/// threads; where `watch` is due, every partition stops at that request,
/// and `watch` sees the device's counters then.
pub(super) fn drive<T: TranslationLayer + 'static, F: Feed<T>>(
    ftl: &mut T,
    stages: &mut HostStages,
    mut feed: F,
    phase: Phase,
    observer: &mut dyn FnMut(Progress),
    watch: &mut impl Watch,
    stop: Option<&AtomicBool>,
) -> Result<(), SimError> {
    let Some(layer) = (ftl as &mut dyn Any).downcast_mut::<Partitioned>() else {
        unreachable!("the driver hands over only a partitioned layer");
    };
    let mut parts = std::mem::take(&mut layer.parts);
    let (partition, geometry, mut requests) = (layer.partition, layer.geometry, layer.requests);
    let mut written = layer.counters.host_pages_written;
    let outcome = std::thread::scope(|scope| {
        let (replies_to, replies) = mpsc::channel::<Reply>();
        let senders: Vec<mpsc::SyncSender<Message>> = parts
            .iter_mut()
            .map(|part| {
                let (send, receive) = mpsc::sync_channel(HANDOFF_BATCHES);
                let replies_to = replies_to.clone();
                scope.spawn(move || serve(part, &receive, &replies_to));
                send
            })
            .collect();
        let mut events = EventCount::new(phase, feed.len_hint(), stop);
        let mut shares: Vec<Vec<(Request, u64)>> = vec![Vec::new(); senders.len()];
        let mut batched = 0;
        let mut ahead = Ahead::with_capacity(4 * LOOKAHEAD);
        let mut dry = false;
        loop {
            while !dry && ahead.len() <= LOOKAHEAD {
                if feed.refill(ftl, stages, &mut ahead)? {
                    events.count(observer)?;
                } else {
                    dry = true;
                }
            }
            let Some(Queued { request, job }) = ahead.pop() else {
                break;
            };
            check_range(&request, geometry.logical_pages).map_err(|error| at_event(stages, error))?;
            requests += 1;
            split(partition, &request, stages.events(), &mut shares);
            if request.op == Op::Write {
                written += u64::from(request.pages);
            }
            batched += 1;
            let due = watch.due(written);
            if due || batched == BATCH_REQUESTS {
                batched = 0;
                hand_out(&mut shares, &senders);
            }
            if due {
                let counters = sum_replies(&senders, &replies, requests)?;
                if watch.observe(job, &counters, &[]) {
                    break;
                }
            }
        }
        hand_out(&mut shares, &senders);
        sum_replies(&senders, &replies, requests)?;
        events.finish(observer);
        Ok(())
    });
    let Some(layer) = (ftl as &mut dyn Any).downcast_mut::<Partitioned>() else {
        unreachable!("the same layer");
    };
    layer.parts = parts;
    layer.requests = requests;
    layer.gather();
    outcome
}

/// The single-threaded FTL's refusal of a request beyond the logical
/// space: its first page past the end (a trim: its last page).
fn check_range(request: &Request, logical_pages: u32) -> Result<(), FtlError> {
    let end = u64::from(request.start.0) + u64::from(request.pages);
    if request.pages == 0 || end <= u64::from(logical_pages) || request.op == Op::Flush {
        return Ok(());
    }
    let lpn = if request.op == Op::Trim { end - 1 } else { u64::from(request.start.0.max(logical_pages)) };
    Err(FtlError::LpnOutOfRange { lpn, logical_pages })
}

/// Appends each partition's share of `request` to its list.
fn split(partition: Partition, request: &Request, event: u64, shares: &mut [Vec<(Request, u64)>]) {
    if request.pages == 1 {
        let part = partition.owner(request.start.0);
        let (start, _) = partition.share(part as u32, request.start.0, 1);
        shares[part].push((Request { start, ..*request }, event));
        return;
    }
    for (part, share) in (0..).zip(shares.iter_mut()) {
        let (start, pages) = partition.share(part, request.start.0, request.pages);
        if pages > 0 {
            share.push((Request { start, pages, ..*request }, event));
        }
    }
}

/// Sends every partition its share.
fn hand_out(shares: &mut [Vec<(Request, u64)>], senders: &[mpsc::SyncSender<Message>]) {
    for (share, sender) in shares.iter_mut().zip(senders) {
        if !share.is_empty() {
            let capacity = share.capacity();
            // A partition's thread stops receiving only when its sender is dropped.
            let _ = sender.send(Message::Requests(std::mem::replace(share, Vec::with_capacity(capacity))));
        }
    }
}

/// The device's counters once every partition has applied what it was sent.
fn sum_replies(
    senders: &[mpsc::SyncSender<Message>],
    replies: &mpsc::Receiver<Reply>,
    requests: u64,
) -> Result<Counters, SimError> {
    for sender in senders {
        let _ = sender.send(Message::Counters);
    }
    let mut parts = Vec::with_capacity(senders.len());
    let mut first_failure: Option<(u64, FtlError)> = None;
    for _ in senders {
        match replies.recv().map_err(|_| SimError::Stopped)? {
            Ok(counters) => parts.push(counters),
            // The earliest event's failure, whichever thread answers first.
            Err(failure) if first_failure.as_ref().is_none_or(|first| failure.0 < first.0) => {
                first_failure = Some(failure);
            }
            Err(_) => {}
        }
    }
    match first_failure {
        Some((event, error)) => Err(failed_at(event, error)),
        None => Ok(sum_counters(requests, &parts)),
    }
}

fn failed_at(event: u64, error: FtlError) -> SimError {
    SimError::AtEvent { event, error, hint: "" }
}

/// A partition's thread: applies the requests it is sent, in order, and
/// answers for its counters; after a request fails it applies nothing more.
fn serve(part: &mut PageFtl, receive: &mpsc::Receiver<Message>, replies: &mpsc::Sender<Reply>) {
    let mut failed = None;
    for message in receive {
        match message {
            Message::Requests(share) if failed.is_none() => failed = apply(part, &share).err(),
            Message::Requests(_) => {}
            Message::Counters => {
                let reply = failed.clone().map_or_else(|| Ok(part.counters().clone()), Err);
                let _ = replies.send(reply);
            }
        }
    }
}

/// Applies a partition's share in order, its mapping entries fetched a
/// few requests ahead as the single-threaded loop does.
fn apply(part: &mut PageFtl, share: &[(Request, u64)]) -> Result<(), (u64, FtlError)> {
    for (index, (request, event)) in share.iter().enumerate() {
        if let Some((ahead, _)) = share.get(index + LOOKAHEAD) {
            part.prefetch_mapping(ahead.start);
        }
        if let Some((halfway, _)) = share.get(index + LOOKAHEAD / 2) {
            part.prefetch_old_page(halfway.start);
        }
        let pages = request.start.0..request.start.0 + request.pages;
        let outcome = match request.op {
            Op::Write => pages.into_iter().try_for_each(|lpn| part.write(Lpn(lpn), request.stream).map(drop)),
            Op::Read => pages.into_iter().try_for_each(|lpn| part.read(Lpn(lpn)).map(drop)),
            Op::Trim => part.trim(request.start, request.pages),
            Op::Flush => Ok(()),
        };
        outcome.map_err(|error| (*event, error))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Partition;

    /// Each partition's share of any run of pages is the run of its own
    /// pages, numbered in order: against a page-by-page count.
    #[test]
    fn a_run_of_pages_is_a_run_of_local_pages_in_each_partition() {
        let partition = Partition { threads: 3, units: 6 };
        let pages = 50;
        let owners: Vec<usize> = (0..pages).map(|lpn| partition.owner(lpn)).collect();
        for start in 0..pages {
            for length in 0..pages - start {
                for part in 0..3_u32 {
                    let below = owners[..start as usize].iter().filter(|&&owner| owner == part as usize).count();
                    let inside = owners[start as usize..(start + length) as usize]
                        .iter()
                        .filter(|&&owner| owner == part as usize)
                        .count();
                    let (first, count) = partition.share(part, start, length);
                    assert_eq!((first.0 as usize, count as usize), (below, inside), "{start}+{length} in {part}");
                }
            }
        }
        assert_eq!(partition.device_block(1, 5 * 10 + 3, 10), (1 + 5 * 3) * 10 + 3);
    }
}
