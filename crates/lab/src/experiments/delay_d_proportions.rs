//! `nandlab reproduce delay-d-proportions`: Delay-D's single-erase scenario
//! at the paper's proportions (Section 4.1: N = 10,000 images per 32 GB, K =
//! 50 N replacements, so the device is overwritten about 17 times), on ext4
//! file systems of the sizes `--set sizes=4G,8G,…` names, each captured once
//! per mount option per `--repeats`, then replayed with the paper's 5 s delay
//! under Disabled / Enabled / Delay-D for every device DISCARD mode, on a
//! fresh and on a workload-aged device. What it shows is Figure 3a's two
//! ratios (Disabled / Delay-D 1322x, Enabled / Delay-D 709x) per device mode
//! and size, on a log axis. `reproduce delay-d` runs the quick scale (K = 5 N).

use super::discard::{
    counted, device_mode_name, mount_option, over_same_capture, policy_name, ratio, DEVICE_MODES, DEVICE_STATES, FEMU,
    PAPER_DELAY_MS, PAPER_FIGURE_3A_RATIOS, POLICIES,
};
use crate::args::ExperimentArgs;
use crate::error::{Context as _, Error, Result};
use crate::shared::{capture_cached, config_from, fsload, CaptureSpec, Spread};
use nandlab_convert::f64_of;
use nandlab_core::ftl::DiscardHandling;
use nandlab_core::host::discard::DiscardPolicy;
use nandlab_report::{Axis, BarChart, BarReference, BarSeries, Comparison, OutputDir, Summary, Verdict};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// `--set` keys of the experiment.
pub const KEYS: [&str; 1] = ["sizes"];
/// File systems captured when `--set sizes` does not say: the quick one, and
/// the paper's with `--paper-scale`.
const DEFAULT_SIZES: [&str; 1] = ["4G"];
const PAPER_SIZES: [&str; 1] = ["32G"];
/// Larger images go to disk (`OUT/traces`) instead of /dev/shm: a tmpfs
/// image holds the file system's data in RAM, up to its whole size without
/// `-o discard`.
const TMPFS_IMAGE_MAX_BYTES: u64 = 16 << 30;
/// Each capture at these proportions takes minutes to hours: one per mount
/// option and size unless `--repeats` says otherwise.
const REPEATS_DEFAULT: usize = 1;

#[derive(Clone, Debug, Serialize)]
struct ProportionRow {
    /// `SIZE-STATE-MODE-POLICY-REPEAT`, unique per row (the docs name rows by it).
    label: String,
    size: String,
    repeat: usize,
    device_state: &'static str,
    device_discard: &'static str,
    policy: &'static str,
    gc_page_copies: u64,
    erases: u64,
    host_pages_written: u64,
    discard_received: u64,
    discard_issued: u64,
    discard_cancelled: u64,
    translation_pages_written: u64,
    /// Workload aging of the aged device: whole passes of the capture, the
    /// host pages it wrote (a pass at K = 50 N is about 17 device writes,
    /// more than the preset's aging budget of `precondition.max_device_writes`,
    /// so the aging may end inside its first pass), and the aging report's
    /// `steady` (the rule's state when the aging stopped).
    aging_passes: u64,
    aging_host_pages_written: u64,
    aging_steady: bool,
}

/// The file-system sizes of `--set sizes=A,B,…` (each a size `capture --size` takes).
fn sizes(args: &ExperimentArgs) -> Result<Vec<String>> {
    let mut sizes: Vec<String> = if args.paper_scale { PAPER_SIZES.to_vec() } else { DEFAULT_SIZES.to_vec() }
        .into_iter()
        .map(str::to_owned)
        .collect();
    for assignment in &args.set {
        match assignment.split_once('=').map(|(key, value)| (key.trim(), value.trim())) {
            Some(("sizes", value)) => {
                sizes = value.split(',').map(|size| size.trim().to_owned()).collect();
                for size in &sizes {
                    nandlab_dhrd::parse_byte_size(size)
                        .map_err(|error| Error::Invalid(format!("--set sizes: {size:?}: {error}")))?;
                }
            }
            _ => {
                return Err(Error::Invalid(format!("--set {assignment:?}: delay-d-proportions takes `sizes=4G,8G,…`")))
            }
        }
    }
    Ok(sizes)
}

/// `nandlab reproduce delay-d-proportions`.
pub fn delay_d_proportions(args: &ExperimentArgs) -> Result<()> {
    let sizes = sizes(args)?;
    let repeats = args.repeats.unwrap_or(REPEATS_DEFAULT).max(1);
    let traces = args.out.join("traces");
    eprintln!(
        "delay-d-proportions: seed {}, single-erase with K = 50 N on {}, Delay-D delay {PAPER_DELAY_MS} ms, {repeats} capture(s) each",
        args.seed,
        sizes.join(", ")
    );
    let mut rows = Vec::new();
    for size in &sizes {
        let image_dir = if nandlab_dhrd::parse_byte_size(size)? > TMPFS_IMAGE_MAX_BYTES {
            traces.clone()
        } else {
            PathBuf::from("/dev/shm")
        };
        for repeat in 0..repeats {
            let seed = args.seed + repeat as u64;
            let mut captured = Vec::new();
            for mount_options in ["discard", "nodiscard"] {
                let spec = CaptureSpec {
                    name: &format!("single-erase-{size}-k50-{mount_options}-{repeat}.nlt"),
                    size,
                    mount_options,
                    mkfs_options: &[],
                    image_dir: &image_dir,
                    argv: fsload(&["uav-single", "--paper-proportions"], seed)?,
                };
                captured.push((mount_options, capture_cached(&spec, &traces, "delay-d-proportions")?));
            }
            for (state, aged) in DEVICE_STATES {
                for handling in DEVICE_MODES {
                    for policy in POLICIES {
                        let trace = captured
                            .iter()
                            .find(|(mount, _)| *mount == mount_option(policy))
                            .map(|(_, trace)| trace.as_path())
                            .context("a capture for every mount option")?;
                        eprintln!(
                            "delay-d-proportions: {size} capture {}/{repeats}, {state} device {}, DISCARD {}",
                            repeat + 1,
                            device_mode_name(handling),
                            policy_name(policy)
                        );
                        rows.push(proportion_row(args, trace, (size, repeat, seed), (state, aged), handling, policy)?);
                    }
                }
            }
        }
    }
    write_proportions(&args.out, &rows, &sizes, args.seed, repeats)
}

/// One counting replay of `trace` with the paper's delay.
fn proportion_row(
    args: &ExperimentArgs,
    trace: &Path,
    (size, repeat, seed): (&str, usize, u64),
    (state, aged): (&'static str, bool),
    handling: DiscardHandling,
    policy: DiscardPolicy,
) -> Result<ProportionRow> {
    let mut config = config_from(FEMU, &[format!("discard.delay_ms={PAPER_DELAY_MS}"), format!("seed={seed}")])?;
    config.ftl.discard = handling;
    config.precondition.enabled = aged;
    let report = counted(&args.watch, trace, &config, policy)?;
    let counters = &report.measured.counters;
    let aging = report.precondition.as_ref().filter(|_| aged);
    Ok(ProportionRow {
        label: format!("{size}-{state}-{}-{}-{repeat}", device_mode_name(handling), policy_name(policy)),
        size: size.to_owned(),
        repeat,
        device_state: state,
        device_discard: device_mode_name(handling),
        policy: policy_name(policy),
        gc_page_copies: counters.gc_page_copies,
        erases: counters.erases,
        host_pages_written: counters.host_pages_written,
        discard_received: report.discard.received_commands,
        discard_issued: report.discard.issued_commands,
        discard_cancelled: report.discard.cancelled_commands,
        translation_pages_written: counters.translation_pages_written,
        aging_passes: aging.and_then(|aging| aging.passes).unwrap_or(0),
        aging_host_pages_written: aging.map_or(0, |aging| aging.phase.counters.host_pages_written),
        aging_steady: aging.is_some_and(|aging| aging.steady),
    })
}

/// One cell of the ratio charts: a size, device state and device mode.
type Cell<'a> = (&'a str, &'a str, DiscardHandling);

/// Per capture, `policy`'s GC copies over Delay-D's on the same device
/// (None where Delay-D copied nothing: no ratio), as median [range].
fn over_delay_d(rows: &[ProportionRow], (size, state, mode): Cell<'_>, policy: DiscardPolicy) -> Option<Spread> {
    let of = |policy: DiscardPolicy| {
        rows.iter().filter(move |r| {
            r.size == size
                && r.device_state == state
                && r.device_discard == device_mode_name(mode)
                && r.policy == policy_name(policy)
        })
    };
    let copies = |policy| of(policy).map(|r| (r.repeat, r.gc_page_copies)).collect::<Vec<_>>();
    over_same_capture(&copies(policy), &copies(DiscardPolicy::DelayD))
}

/// GC copies of one cell and policy, median [range] over the captures.
fn copies(rows: &[ProportionRow], (size, state, mode): Cell<'_>, policy: DiscardPolicy) -> Option<Spread> {
    Spread::of(
        rows.iter()
            .filter(|r| {
                r.size == size
                    && r.device_state == state
                    && r.device_discard == device_mode_name(mode)
                    && r.policy == policy_name(policy)
            })
            .map(|r| f64_of(r.gc_page_copies))
            .collect(),
    )
}

/// The chart file of a device state.
fn chart_file(state: &str) -> String {
    format!("paper_proportions_{state}.svg")
}

/// Figure 3a's ratios on one device state: a group per size and device
/// mode, a bar per ratio (median, whiskers the range), on a log axis beside
/// the paper's 1322x and 709x. A ratio of 0 (Delay-D copied pages, the other
/// policy none) and a missing one (Delay-D copied nothing) are not drawn.
fn ratio_chart(rows: &[ProportionRow], sizes: &[String], state: &str) -> BarChart {
    let cells: Vec<Cell<'_>> =
        sizes.iter().flat_map(|size| DEVICE_MODES.iter().map(move |&mode| (size.as_str(), state, mode))).collect();
    let groups = cells.iter().map(|(size, _, mode)| format!("{size} {}", device_mode_name(*mode))).collect();
    let title = format!("Single-erase at K = 50 N: GC copies over Delay-D's ({state} device; 0 or none: no bar)");
    let mut chart = BarChart::new(&title, groups, Axis::new("GC page copies / Delay-D's, same capture").log());
    for (policy, paper) in PAPER_FIGURE_3A_RATIOS {
        let name = format!("{} / Delay-D", policy_name(policy));
        let spreads: Vec<Option<Spread>> = cells.iter().map(|&cell| over_delay_d(rows, cell, policy)).collect();
        let medians = spreads.iter().map(|spread| spread.map_or(f64::NAN, |s| s.median)).collect();
        let ranges = spreads.iter().map(|spread| spread.map_or((f64::NAN, f64::NAN), |s| (s.min, s.max))).collect();
        chart = chart.with(BarSeries::new(&name, medians).ranges(ranges));
        let reference = BarReference::new(&format!("paper: {name} = {paper}x (Fig. 3a)"), vec![paper; cells.len()]);
        chart = chart.reference(reference.on(&name));
    }
    chart
}

fn write_proportions(out: &Path, rows: &[ProportionRow], sizes: &[String], seed: u64, repeats: usize) -> Result<()> {
    let dir = OutputDir::create(out)?;
    dir.write_csv("paper_proportions.csv", rows)?;
    for (state, _) in DEVICE_STATES {
        dir.write_bar_chart(&chart_file(state), &ratio_chart(rows, sizes, state))?;
    }
    let largest = sizes.last().map_or("", String::as_str);
    let comparisons: Vec<Comparison> = DEVICE_STATES
        .iter()
        .flat_map(|&(state, _)| DEVICE_MODES.iter().map(move |&mode| (largest, state, mode)))
        .flat_map(|cell| PAPER_FIGURE_3A_RATIOS.iter().map(move |&(policy, paper)| (cell, policy, paper)))
        .map(|(cell, policy, paper)| {
            let (top, bottom) = (copies(rows, cell, policy), copies(rows, cell, DiscardPolicy::DelayD));
            let measured = match (top, bottom) {
                (Some(top), Some(bottom)) => ratio(top.median, bottom.median),
                _ => "-".to_owned(),
            };
            let range = over_delay_d(rows, cell, policy).map(|s| (s.median, s.min, s.max));
            Comparison {
                quantity: format!(
                    "single-erase GC copies, {} / Delay-D, {} {} device, device DISCARD {}",
                    policy_name(policy),
                    cell.0,
                    cell.1,
                    device_mode_name(cell.2)
                ),
                paper: format!("{paper}x (Figure 3a)"),
                measured,
                // Delay-D copying nothing leaves no ratio: not comparable.
                verdict: Verdict::of_ratio_range(paper, range),
                note: "Median of the per-capture ratios; docs/delay-d.md, \"At the paper's proportions\".".to_owned(),
            }
        })
        .collect();
    let table: Vec<Vec<String>> = sizes
        .iter()
        .flat_map(|size| {
            DEVICE_STATES
                .iter()
                .flat_map(move |&(state, _)| DEVICE_MODES.iter().map(move |&mode| (size.as_str(), state, mode)))
        })
        .map(|cell| {
            let show = |spread: Option<Spread>, decimals| spread.map_or_else(|| "-".to_owned(), |s| s.show(decimals));
            let mut line = vec![cell.0.to_owned(), cell.1.to_owned(), device_mode_name(cell.2).to_owned()];
            line.extend(POLICIES.iter().map(|&policy| show(copies(rows, cell, policy), 0)));
            line.extend(
                [DiscardPolicy::Off, DiscardPolicy::Online].map(|policy| show(over_delay_d(rows, cell, policy), 2)),
            );
            line
        })
        .collect();
    let mut summary = Summary::new("Delay-D at the paper's proportions: single-erase, K = 50 N");
    summary
        .paragraph(&format!(
            "Delay-D (Aerospace 2024), Section 4.1 and Figure 3a, single-erase at the paper's proportions: a real \
             ext4 (mkfs -b 4096) of each size ({sizes}) pre-filled to 50 % with dummy files, N images of 1 MiB \
             (the paper's 10,000 per 32 GB, scaled to the file system's usable size) and K = 50 N replacements \
             (`nandlab fsload uav-single --paper-proportions`), captured {repeats} time(s) per mount option \
             (capture r uses workload seed {seed} + r). Disabled replays the `-o nodiscard` capture, Enabled and \
             Delay-D (the paper's 5 s delay, at the first journal commit after it) the `-o discard` one, on \
             `femu-32g` fitted to the file system, for each device DISCARD mode (exact; ignored, what the paper's \
             FEMU did; dftl), on a fresh device (the paper's: empty, then overwritten about 17 times) and on one \
             aged by workload aging. Ratios are per capture, median [range]; Delay-D copying nothing leaves none.",
            sizes = sizes.join(", "),
        ))
        .image("GC copies over Delay-D's, fresh device", &chart_file("fresh"))
        .image("GC copies over Delay-D's, aged device", &chart_file("aged"))
        .comparisons(&comparisons)
        .table(
            &[
                "size",
                "device",
                "device DISCARD",
                "Disabled",
                "Enabled",
                "Delay-D",
                "Disabled / Delay-D",
                "Enabled / Delay-D",
            ],
            &table,
        )
        .code(
            "sh",
            &format!(
                "nandlab reproduce delay-d-proportions --seed {seed} --repeats {repeats} --set sizes={} --out DIR   # as root",
                sizes.join(",")
            ),
        );
    dir.write_summary(&summary)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(set: &[&str], paper_scale: bool) -> ExperimentArgs {
        ExperimentArgs { set: set.iter().map(|s| (*s).to_owned()).collect(), paper_scale, ..ExperimentArgs::default() }
    }

    #[test]
    fn sizes_come_from_the_scale_or_the_set_key_and_bad_ones_are_refused() {
        assert_eq!(sizes(&args(&[], false)).expect("default"), ["4G"]);
        assert_eq!(sizes(&args(&[], true)).expect("paper"), ["32G"]);
        assert_eq!(sizes(&args(&["sizes=4G, 8G"], false)).expect("list"), ["4G", "8G"]);
        let bad = sizes(&args(&["sizes=4G,lots"], false)).expect_err("not a size");
        assert!(bad.to_string().contains("\"lots\""), "{bad}");
        let key = sizes(&args(&["size=4G"], false)).expect_err("unknown key");
        assert!(key.to_string().contains("sizes=4G,8G"), "{key}");
    }

    fn row(repeat: usize, policy: DiscardPolicy, gc_page_copies: u64) -> ProportionRow {
        ProportionRow {
            label: String::new(),
            size: "4G".to_owned(),
            repeat,
            device_state: "fresh",
            device_discard: "ignored",
            policy: policy_name(policy),
            gc_page_copies,
            erases: 0,
            host_pages_written: 0,
            discard_received: 0,
            discard_issued: 0,
            discard_cancelled: 0,
            translation_pages_written: 0,
            aging_passes: 0,
            aging_host_pages_written: 0,
            aging_steady: false,
        }
    }

    #[test]
    fn ratios_pair_each_capture_with_its_own_delay_d_and_skip_a_delay_d_without_copies() {
        let rows = [
            row(0, DiscardPolicy::DelayD, 10),
            row(0, DiscardPolicy::Online, 30),
            row(1, DiscardPolicy::DelayD, 40),
            row(1, DiscardPolicy::Online, 40),
            row(2, DiscardPolicy::DelayD, 0),
            row(2, DiscardPolicy::Online, 5),
        ];
        let cell = ("4G", "fresh", DiscardHandling::Ignored);
        let ratios = over_delay_d(&rows, cell, DiscardPolicy::Online).expect("two captures have a ratio");
        assert_eq!((ratios.median, ratios.min, ratios.max), (2.0, 1.0, 3.0));
        assert_eq!(over_delay_d(&rows, ("4G", "aged", DiscardHandling::Ignored), DiscardPolicy::Online), None);
        assert_eq!(copies(&rows, cell, DiscardPolicy::Online).expect("three").median, 30.0);
    }
}
