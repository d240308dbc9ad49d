//! MQSim's input files as a nandlab configuration: the SSD configuration
//! (`<Execution_Parameter_Set>`: `<Host_Parameter_Set>`, `<Device_Parameter_Set>`
//! with its `<Flash_Parameter_Set>`) becomes `[device]`, `[ftl]`, `[timing]`
//! and `[precondition]` keys, and the workload (`<MQSim_IO_Scenarios>`) its
//! first `<IO_Scenario>`'s synthetic flows as `[[job]]` tables, or its
//! trace-based flow as a trace to replay. The schema is MQSim's
//! (github.com/CMU-SAFARI/MQSim, `src/exec/*_Parameter_Set.cpp`), and so are
//! the semantics each mapping follows (named at each): the logical space is
//! `(1 − Overprovisioning_Ratio)` of the physical pages, each flow gets
//! `1/flows` of it, GC runs below `GC_Exec_Threshold × Block_No_Per_Plane` free
//! blocks but never below 10 (`max_ongoing_gc_reqs_per_plane`).
//!
//! Every element nandlab has no counterpart for is named in an
//! [`MqsimWarning`] (element, value, why); a value nandlab cannot represent
//! (a hybrid mapping, flows confined to some channels, a request size that is
//! no whole number of pages, …) is a [`ConfigError`] naming the file, line
//! and element. The mapping, element by element: docs/mqsim.md.

use super::{ConfigError, Document};
use nandlab_convert::{f64_of, saturating};
use std::cell::Cell;
use std::fmt;
use std::path::{Path, PathBuf};

/// Bytes of an MQSim sector (`SECTOR_SIZE_IN_BYTE`).
const SECTOR_BYTES: u64 = 512;
/// MQSim raises the GC threshold to this many blocks per plane
/// (`max_ongoing_gc_reqs_per_plane`, a constant of `SSD_Device.cpp`).
const MQSIM_GC_THRESHOLD_FLOOR: u64 = 10;
/// Largest MQSim file read: far beyond any configuration, refused before reading.
const FILE_BYTES_MAX: u64 = 16 << 20;

/// What MQSim's two files say, as nandlab input.
#[derive(Clone, Debug)]
pub struct MqsimInput {
    /// A configuration document (layered as a file would be: `--set` above it).
    pub document: toml::Table,
    /// The trace of a trace-based flow, to replay in MQSim's format.
    pub trace: Option<PathBuf>,
    /// Elements nandlab has no counterpart for.
    pub warnings: Vec<MqsimWarning>,
}

/// An element nandlab does not use, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MqsimWarning {
    /// The file, line and element: `ssd.xml:12 <Queue_Fetch_Size>`.
    pub element: String,
    pub value: String,
    pub why: String,
}

impl fmt::Display for MqsimWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}: {}", self.element, nandlab_quote::quote(&self.value), self.why)
    }
}

/// Reads and maps MQSim's SSD configuration and workload files. The
/// configuration they give is checked (a key out of its bounds is blamed on
/// the element that set it); a trace flow's relative `File_Path` is taken
/// from the workload file's folder.
pub fn read(ssd: &Path, workload: &Path) -> Result<MqsimInput, ConfigError> {
    let ssd_text = read_text(ssd)?;
    let workload_text = read_text(workload)?;
    let folder = workload.parent().unwrap_or(Path::new("."));
    parse((&ssd_text, &ssd.display().to_string()), (&workload_text, &workload.display().to_string()), folder)
}

fn read_text(path: &Path) -> Result<String, ConfigError> {
    let file_error = |error: std::io::Error| ConfigError::new("", format!("{}: {error}", path.display()));
    let bytes = std::fs::metadata(path).map_err(file_error)?.len();
    if bytes > FILE_BYTES_MAX {
        return Err(ConfigError::new("", format!("{}: {bytes} bytes is no MQSim configuration", path.display())));
    }
    std::fs::read_to_string(path).map_err(file_error)
}

/// [`read`] of texts: `(text, origin)` of each file, and the folder a
/// relative trace path is taken from.
pub fn parse(ssd: (&str, &str), workload: (&str, &str), folder: &Path) -> Result<MqsimInput, ConfigError> {
    let ssd_doc = parse_xml(ssd)?;
    let workload_doc = parse_xml(workload)?;
    let mut mapping = Mapping::default();
    let device = map_ssd(&ssd_doc, ssd.1, &mut mapping)?;
    let trace = map_workload(&workload_doc, workload.1, &device, folder, &mut mapping)?;
    mapping.check()?;
    Ok(MqsimInput { document: mapping.table, trace, warnings: mapping.warnings })
}

fn parse_xml<'input>((text, origin): (&'input str, &str)) -> Result<roxmltree::Document<'input>, ConfigError> {
    roxmltree::Document::parse(text).map_err(|error| ConfigError::new("", format!("{origin}: not XML: {error}")))
}

/// The configuration being built, where each key came from, and the warnings.
#[derive(Default)]
struct Mapping {
    table: toml::Table,
    /// (nandlab key, the element that set it, its value).
    origins: Vec<(String, String, String)>,
    warnings: Vec<MqsimWarning>,
}

impl Mapping {
    /// Sets `section.key` (or a top-level `key`) from `element`.
    fn set(&mut self, key: &str, value: impl Into<toml::Value>, from: &Element) {
        let value = value.into();
        let (section, leaf) = key.split_once('.').map_or((None, key), |(section, leaf)| (Some(section), leaf));
        let table = match section {
            Some(section) => self
                .table
                .entry(section)
                .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                .as_table_mut()
                .expect("sections are tables"),
            None => &mut self.table,
        };
        table.insert(leaf.to_owned(), value);
        self.origins.push((key.to_owned(), from.place.clone(), from.value.clone()));
    }

    /// Sets `key` of the `[[job]]` table at `index` from `element`.
    fn set_job(&mut self, index: usize, key: &str, value: impl Into<toml::Value>, from: &Element) {
        let jobs = self.table.entry("job").or_insert_with(|| toml::Value::Array(Vec::new()));
        let toml::Value::Array(jobs) = jobs else { unreachable!("job is the array of [[job]] tables") };
        while jobs.len() <= index {
            jobs.push(toml::Value::Table(toml::Table::new()));
        }
        let job = jobs[index].as_table_mut().expect("jobs are tables");
        let name = job.get("name").and_then(toml::Value::as_str).unwrap_or_default().to_owned();
        job.insert(key.to_owned(), value.into());
        self.origins.push((format!("job.{name}.{key}"), from.place.clone(), from.value.clone()));
    }

    fn warn(&mut self, element: &Element, why: impl Into<String>) {
        self.warnings.push(MqsimWarning {
            element: element.place.clone(),
            value: element.value.clone(),
            why: why.into(),
        });
    }

    /// Builds the configuration alone, as a run would, and blames a key out
    /// of its bounds on the element that set it.
    fn check(&self) -> Result<(), ConfigError> {
        let document = Document::Table(self.table.clone());
        super::from_sources(None, Some(document), &[], None).map(drop).map_err(|error| {
            let origin = self.origins.iter().rev().find(|(key, _, _)| *key == error.key);
            match origin {
                Some((key, place, value)) => {
                    ConfigError::new("", format!("{place} = {value} (nandlab's {key}): {}", error.reason))
                }
                None => ConfigError::new("", format!("the configuration MQSim's files give: {error}")),
            }
        })
    }
}

/// One element's text and where it is (`file:line <Name>`).
#[derive(Clone, Debug)]
struct Element {
    place: String,
    value: String,
}

/// The child elements of one parameter set, each marked once used; what is
/// left unused at the end is warned about ([`Section::finish`]).
struct Section<'a, 'input> {
    origin: &'a str,
    doc: &'a roxmltree::Document<'input>,
    children: Vec<(roxmltree::Node<'a, 'input>, Cell<bool>)>,
}

impl<'a, 'input> Section<'a, 'input> {
    fn new(origin: &'a str, doc: &'a roxmltree::Document<'input>, node: roxmltree::Node<'a, 'input>) -> Self {
        let children =
            node.children().filter(roxmltree::Node::is_element).map(|child| (child, Cell::new(false))).collect();
        Self { origin, doc, children }
    }

    fn element_of(&self, node: roxmltree::Node<'_, '_>) -> Element {
        let line = self.doc.text_pos_at(node.range().start).row;
        Element {
            place: format!("{}:{line} <{}>", self.origin, node.tag_name().name()),
            value: match node.children().filter(roxmltree::Node::is_element).count() {
                0 => node.text().unwrap_or_default().trim().to_owned(),
                elements => format!("({elements} elements)"),
            },
        }
    }

    /// The element `name`, marked used.
    fn get(&self, name: &str) -> Option<Element> {
        let (node, used) = self.children.iter().find(|(node, _)| node.tag_name().name() == name)?;
        used.set(true);
        Some(self.element_of(*node))
    }

    /// The element `name`, which MQSim's files always give.
    fn required(&self, name: &str, parent: &str) -> Result<Element, ConfigError> {
        self.get(name).ok_or_else(|| {
            ConfigError::new(
                "",
                format!("{}: <{parent}> has no <{name}> (nandlab takes no MQSim default)", self.origin),
            )
        })
    }

    /// The element `name` read as a count, with the element.
    fn count(&self, name: &str) -> Result<Option<(u64, Element)>, ConfigError> {
        self.get(name).map(|element| Ok((number(&element)?, element))).transpose()
    }

    /// The child parameter set `name`, marked used.
    fn section(&self, name: &str) -> Option<Section<'a, 'input>> {
        let (node, used) = self.children.iter().find(|(node, _)| node.tag_name().name() == name)?;
        used.set(true);
        Some(Section::new(self.origin, self.doc, *node))
    }

    /// Warns about every element not used: MQSim's own (`reasons`) with
    /// why nandlab has no counterpart, others as unknown to MQSim.
    fn finish(self, reasons: &[(&str, &str)], mapping: &mut Mapping) {
        for (node, used) in &self.children {
            if used.get() {
                continue;
            }
            let name = node.tag_name().name();
            let why = reasons
                .iter()
                .find(|(known, _)| *known == name)
                .map_or("not an element of MQSim's schema; ignored (as MQSim ignores it)", |(_, why)| why);
            mapping.warn(&self.element_of(*node), why);
        }
    }
}

fn invalid(element: &Element, reason: impl fmt::Display) -> ConfigError {
    ConfigError::new("", format!("{} = {}: {reason}", element.place, nandlab_quote::quote(&element.value)))
}

fn number<T: std::str::FromStr>(element: &Element) -> Result<T, ConfigError> {
    element.value.parse().map_err(|_| invalid(element, format!("expected a number ({})", std::any::type_name::<T>())))
}

fn boolean(element: &Element) -> Result<bool, ConfigError> {
    match element.value.as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(invalid(element, "expected true or false")),
    }
}

fn integer(value: u64, element: &Element) -> Result<i64, ConfigError> {
    i64::try_from(value).map_err(|_| invalid(element, "too large"))
}

/// A ratio element (`Overprovisioning_Ratio`, a percentage / 100) in [0, 1].
fn fraction(element: &Element, scale: f64) -> Result<f64, ConfigError> {
    let value = number::<f64>(element)? / scale;
    if !(0.0..=1.0).contains(&value) {
        return Err(invalid(element, format!("must lie between 0 and {scale}")));
    }
    Ok(value)
}

/// What the workload mapping needs of the device.
struct DeviceShape {
    channels: u64,
    chips: u64,
    dies: u64,
    planes: u64,
    blocks: u64,
    page_bytes: u64,
    physical: u64,
    logical: u64,
    /// `Data_Cache_Capacity` in bytes, when the device has a data cache.
    data_cache_bytes: u64,
    preconditioning: bool,
}

/// Elements of `<Host_Parameter_Set>`, none with a counterpart.
const HOST_REASONS: &[(&str, &str)] = &[
    ("PCIe_Lane_Bandwidth", "nandlab models no host link: a request's data takes no time to cross it"),
    ("PCIe_Lane_Count", "nandlab models no host link: a request's data takes no time to cross it"),
    ("SATA_Processing_Delay", "nandlab's SATA interface has no per-command host processing delay"),
    ("Enable_ResponseTime_Logging", "nandlab reports latency percentiles, and a throughput series with --timing-csv"),
    ("ResponseTime_Logging_Period_Length", "see timing.series_interval_ns for the throughput series' interval"),
];

/// Elements of `<Device_Parameter_Set>` with no counterpart.
const DEVICE_REASONS: &[(&str, &str)] = &[
    (
        "IO_Queue_Depth",
        "the host queues' capacity; each flow's depth (Average_No_of_Reqs_in_Queue) is its job's queue_depth",
    ),
    ("Queue_Fetch_Size", "nandlab's controller takes every queued request at once"),
    ("Caching_Mechanism", "the data cache is nandlab's device write buffer (timing.write_buffer_pages), one model"),
    ("Data_Cache_Sharing_Mode", "nandlab's write buffer is shared by every job"),
    ("Data_Cache_DRAM_Row_Size", "nandlab models no DRAM timing"),
    ("Data_Cache_DRAM_Data_Rate", "nandlab models no DRAM timing"),
    ("Data_Cache_DRAM_Data_Busrt_Size", "nandlab models no DRAM timing"),
    ("Data_Cache_DRAM_tRCD", "nandlab models no DRAM timing"),
    ("Data_Cache_DRAM_tCL", "nandlab models no DRAM timing"),
    ("Data_Cache_DRAM_tRP", "nandlab models no DRAM timing"),
    ("CMT_Sharing_Mode", "nandlab's mapping cache is shared by every job"),
    (
        "Transaction_Scheduling_Policy",
        "nandlab's dies serve operations in order (timing.die_queue = \"fifo\" or \"edf\")",
    ),
    ("Use_Copyback_for_GC", "nandlab's GC copies cross the channel (read, transfer, program); no copyback"),
    (
        "Preemptible_GC_Enabled",
        "nandlab's GC is not preempted (timing.priority_aware_gc defers it for priority requests)",
    ),
    ("GC_Hard_Threshold", "belongs to preemptible GC, which nandlab has not"),
    ("Static_Wearleveling_Enabled", "nandlab has dynamic wear-leveling only (ftl.free_block_order)"),
    ("Static_Wearleveling_Threshold", "nandlab has dynamic wear-leveling only (ftl.free_block_order)"),
    ("Preferred_suspend_erase_time_for_read", "nandlab does not suspend erases or programs"),
    ("Prefered_suspend_erase_time_for_read", "nandlab does not suspend erases or programs"),
    ("Preferred_suspend_erase_time_for_write", "nandlab does not suspend erases or programs"),
    ("Preferred_suspend_write_time_for_read", "nandlab does not suspend erases or programs"),
    ("Flash_Channel_Width", "read with Channel_Transfer_Rate only, which is not given"),
    (
        "Flash_Comm_Protocol",
        "nandlab's channel is a data rate (timing.channel_bytes_per_s), no protocol's command cycles",
    ),
];

/// Elements of `<Flash_Parameter_Set>` with no counterpart.
const FLASH_REASONS: &[(&str, &str)] = &[
    ("CMD_Suspension_Support", "nandlab does not suspend erases or programs"),
    ("Suspend_Erase_Time", "nandlab does not suspend erases or programs"),
    ("Suspend_Program_Time", "nandlab does not suspend erases or programs"),
    ("Page_Metadat_Capacity", "nandlab keeps no out-of-band area (its maps are in the controller)"),
];

/// `<Execution_Parameter_Set>` onto `[device]`, `[ftl]`, `[timing]`, `[precondition]` and `seed`.
fn map_ssd(doc: &roxmltree::Document<'_>, origin: &str, mapping: &mut Mapping) -> Result<DeviceShape, ConfigError> {
    let root = doc.root_element();
    if root.tag_name().name() != "Execution_Parameter_Set" {
        return Err(ConfigError::new("", format!("{origin}: the root element is not <Execution_Parameter_Set>")));
    }
    let top = Section::new(origin, doc, root);
    if let Some(host) = top.section("Host_Parameter_Set") {
        host.finish(HOST_REASONS, mapping);
    }
    let device = top.section("Device_Parameter_Set").ok_or_else(|| {
        ConfigError::new("", format!("{origin}: <Execution_Parameter_Set> has no <Device_Parameter_Set>"))
    })?;
    top.finish(&[], mapping);
    let flash = device.section("Flash_Parameter_Set").ok_or_else(|| {
        ConfigError::new("", format!("{origin}: <Device_Parameter_Set> has no <Flash_Parameter_Set>"))
    })?;
    let shape = map_geometry(&device, &flash, mapping)?;
    map_latencies(&flash, mapping)?;
    map_ftl(&device, &shape, mapping)?;
    map_host_side(&device, mapping)?;
    flash.finish(FLASH_REASONS, mapping);
    device.finish(DEVICE_REASONS, mapping);
    Ok(shape)
}

/// The geometry; `Overprovisioning_Ratio` keeps `1 − ratio` of the physical
/// pages logical (MQSim's `Address_Mapping_Unit_Base`, as scripts/vs_mqsim.py).
fn map_geometry(device: &Section, flash: &Section, mapping: &mut Mapping) -> Result<DeviceShape, ConfigError> {
    const DEVICE: &str = "Device_Parameter_Set";
    const FLASH: &str = "Flash_Parameter_Set";
    let mut counts = Vec::new();
    for (section, parent, name, key) in [
        (device, DEVICE, "Flash_Channel_Count", "device.channels"),
        (device, DEVICE, "Chip_No_Per_Channel", "device.chips_per_channel"),
        (flash, FLASH, "Die_No_Per_Chip", "device.dies_per_chip"),
        (flash, FLASH, "Plane_No_Per_Die", "device.planes_per_die"),
        (flash, FLASH, "Block_No_Per_Plane", "device.blocks_per_plane"),
        (flash, FLASH, "Page_No_Per_Block", "device.pages_per_block"),
        (flash, FLASH, "Page_Capacity", "device.page_size"),
    ] {
        let element = section.required(name, parent)?;
        let count: u64 = number(&element)?;
        mapping.set(key, integer(count, &element)?, &element);
        counts.push(count);
    }
    let &[channels, chips, dies, planes, blocks, pages, page_bytes] = counts.as_slice() else {
        unreachable!("seven geometry elements")
    };
    let physical =
        [channels, chips, dies, planes, blocks, pages].iter().try_fold(1u64, |product, &n| product.checked_mul(n));
    let ratio_element = device.required("Overprovisioning_Ratio", DEVICE)?;
    let ratio = fraction(&ratio_element, 1.0)?;
    let physical = physical.ok_or_else(|| invalid(&ratio_element, "the geometry's page count overflows"))?;
    let logical = saturating::<u64>((f64_of(physical) * (1.0 - ratio)).floor());
    mapping.set("device.logical_pages", integer(logical, &ratio_element)?, &ratio_element);
    if let Some(element) = flash.get("Block_PE_Cycles_Limit") {
        mapping.set("device.pe_cycles", integer(number(&element)?, &element)?, &element);
    }
    let data_cache_bytes = device.count("Data_Cache_Capacity")?.map_or(0, |(bytes, _)| bytes);
    let preconditioning = match device.get("Enabled_Preconditioning") {
        Some(element) => {
            let enabled = boolean(&element)?;
            mapping.set("precondition.enabled", enabled, &element);
            enabled
        }
        None => false,
    };
    Ok(DeviceShape {
        channels,
        chips,
        dies,
        planes,
        blocks,
        page_bytes,
        physical,
        logical,
        data_cache_bytes,
        preconditioning,
    })
}

/// Read and program latencies: nandlab has one of each per page, so a
/// multi-level cell's are the mean over a block's page types (as the device
/// presets derive theirs): SLC the LSB, MLC LSB and MSB, TLC all three.
fn map_latencies(flash: &Section, mapping: &mut Mapping) -> Result<(), ConfigError> {
    let technology = flash.required("Flash_Technology", "Flash_Parameter_Set")?;
    let levels: &[&str] = match technology.value.as_str() {
        "SLC" => &["LSB"],
        "MLC" => &["LSB", "MSB"],
        "TLC" => &["LSB", "CSB", "MSB"],
        _ => return Err(invalid(&technology, "expected SLC, MLC or TLC")),
    };
    for (kind, key) in [("Read", "timing.read_ns"), ("Program", "timing.program_ns")] {
        let mut sum = 0u64;
        let mut values = Vec::new();
        for level in levels {
            let element = flash.required(&format!("Page_{kind}_Latency_{level}"), "Flash_Parameter_Set")?;
            let ns: u64 = number(&element)?;
            sum = sum.checked_add(ns).ok_or_else(|| invalid(&element, "too large"))?;
            values.push((element, ns));
        }
        let count = u64::try_from(levels.len()).unwrap_or(1);
        let mean = (sum + count / 2) / count;
        let (first, _) = &values[0];
        if values.iter().any(|(_, ns)| *ns != mean) {
            mapping.warn(
                first,
                format!(
                    "nandlab has one {} latency per page: {key} = {mean}, the mean over a {} block's page types",
                    kind.to_lowercase(),
                    technology.value
                ),
            );
        }
        mapping.set(key, integer(mean, first)?, first);
        // The levels a technology does not have: MQSim reads them and uses none.
        for level in ["LSB", "CSB", "MSB"].iter().filter(|level| !levels.contains(level)) {
            if let Some(unused) = flash.get(&format!("Page_{kind}_Latency_{level}")) {
                mapping.warn(
                    &unused,
                    format!("{} flash has no {level} pages (MQSim does not use it either)", technology.value),
                );
            }
        }
    }
    let erase = flash.required("Block_Erase_Latency", "Flash_Parameter_Set")?;
    mapping.set("timing.erase_ns", integer(number(&erase)?, &erase)?, &erase);
    Ok(())
}

/// The FTL: page-level mapping with MQSim's static allocation, its GC
/// trigger and victim choice, its wear-levelling and its mapping cache.
fn map_ftl(device: &Section, shape: &DeviceShape, mapping: &mut Mapping) -> Result<(), ConfigError> {
    if let Some(element) = device.get("Memory_Type") {
        if element.value != "FLASH" {
            return Err(invalid(&element, "nandlab simulates flash only"));
        }
    }
    if let Some(element) = device.get("Address_Mapping") {
        if element.value != "PAGE_LEVEL" {
            return Err(invalid(&element, "nandlab maps pages (PAGE_LEVEL); it has no hybrid mapping"));
        }
    }
    if let Some(element) = device.get("Plane_Allocation_Scheme") {
        mapping.set("ftl.allocation", "static", &element);
        if element.value != "CWDP" {
            mapping.warn(
                &element,
                "nandlab's static allocation puts logical page p on parallel unit p mod units, channel first (CWDP): \
                 the units each page lands on differ, their number and share do not",
            );
        }
    }
    // GC_and_WL_Unit_Base: threshold = (unsigned)(ratio × blocks per plane), at least 1, then raised to
    // max_ongoing_gc_reqs_per_plane.
    if let Some(element) = device.get("GC_Exec_Threshold") {
        let ratio = fraction(&element, 1.0)?;
        let blocks = saturating::<u64>(ratio * f64_of(shape.blocks));
        let threshold = blocks.max(MQSIM_GC_THRESHOLD_FLOOR);
        mapping.set("ftl.gc_threshold_blocks", integer(threshold, &element)?, &element);
    }
    if let Some(element) = device.get("GC_Block_Selection_Policy") {
        map_victim_policy(&element, shape, mapping)?;
    }
    if let Some(element) = device.get("Dynamic_Wearleveling_Enabled") {
        let order = if boolean(&element)? { "least-worn" } else { "fifo" };
        mapping.set("ftl.free_block_order", order, &element);
    }
    let ideal = device.get("Ideal_Mapping_Table");
    let cmt = device.get("CMT_Capacity");
    match (ideal, cmt) {
        (Some(ideal), cmt) if boolean(&ideal)? => {
            if let Some(cmt) = cmt {
                mapping.warn(&cmt, "the whole map is in RAM (Ideal_Mapping_Table): no mapping cache");
            }
            mapping.set("ftl.discard", "exact", &ideal);
        }
        (_, Some(cmt)) => map_mapping_cache(&cmt, shape, mapping)?,
        (Some(ideal), None) => return Err(invalid(&ideal, "a cached mapping table needs <CMT_Capacity>")),
        (None, None) => {}
    }
    Ok(())
}

/// `GC_Block_Selection_Policy`: GREEDY, RGA (the best of ⌊log2 blocks per
/// plane⌋ random blocks, `GC_and_WL_Unit_Page_Level`'s `rga_set_size`),
/// RANDOM, FIFO; RANDOM_P and RANDOM_PP as RANDOM.
fn map_victim_policy(element: &Element, shape: &DeviceShape, mapping: &mut Mapping) -> Result<(), ConfigError> {
    let policy = match element.value.as_str() {
        "GREEDY" => "greedy",
        "FIFO" => "fifo",
        "RANDOM" => "random",
        "RANDOM_P" | "RANDOM_PP" => {
            mapping.warn(
                element,
                "nandlab's random victim is any sealed block; MQSim's RANDOM_P/RANDOM_PP exclude blocks being \
                 written or with ongoing operations: gc_policy = \"random\"",
            );
            "random"
        }
        "RGA" => {
            let set_size = u64::from(shape.blocks.max(1).ilog2()).max(1);
            mapping.set("ftl.d_choices", integer(set_size, element)?, element);
            "d-choices"
        }
        _ => return Err(invalid(element, "expected GREEDY, RGA, RANDOM, RANDOM_P, RANDOM_PP or FIFO")),
    };
    mapping.set("ftl.gc_policy", policy, element);
    Ok(())
}

/// A cached mapping table (`Ideal_Mapping_Table` false) is nandlab's DFTL
/// model (`ftl.discard = "dftl"`) with a cache of the same share of the
/// map: `CMT_Capacity` bytes hold entries of ⌈(2·log2(physical pages) +
/// sectors per page) / 8⌉ bytes (`Address_Mapping_Unit_Page_Level`).
fn map_mapping_cache(cmt: &Element, shape: &DeviceShape, mapping: &mut Mapping) -> Result<(), ConfigError> {
    let bytes: u64 = number(cmt)?;
    let entry_bits =
        saturating::<u64>((2.0 * f64_of(shape.physical.max(2)).log2()).ceil()) + shape.page_bytes / SECTOR_BYTES;
    let entry_bytes = entry_bits.div_ceil(8).max(1);
    let entries = bytes / entry_bytes;
    if entries == 0 {
        return Err(invalid(cmt, format!("holds no mapping entry of {entry_bytes} bytes")));
    }
    let share = (f64_of(entries) / f64_of(shape.logical.max(1))).min(1.0);
    mapping.set("ftl.discard", "dftl", cmt);
    mapping.set("ftl.map_cache_fraction", share, cmt);
    Ok(())
}

/// The host interface, the channel bus and the seed.
fn map_host_side(device: &Section, mapping: &mut Mapping) -> Result<(), ConfigError> {
    if let Some(element) = device.get("HostInterface_Type") {
        let interface = match element.value.as_str() {
            "NVME" => "nvme",
            "SATA" => "sata",
            _ => return Err(invalid(&element, "expected NVME or SATA")),
        };
        mapping.set("timing.interface", interface, &element);
    }
    // Channel_Transfer_Rate is in MT/s, Flash_Channel_Width in bytes per transfer.
    if let Some(rate) = device.get("Channel_Transfer_Rate") {
        let width = device.count("Flash_Channel_Width")?.map_or(1, |(width, _)| width);
        let bytes_per_s = number::<u64>(&rate)?
            .checked_mul(width)
            .and_then(|bytes| bytes.checked_mul(1_000_000))
            .ok_or_else(|| invalid(&rate, "too large"))?;
        mapping.set("timing.channel_bytes_per_s", integer(bytes_per_s, &rate)?, &rate);
    }
    if let Some(element) = device.get("Seed") {
        mapping.set("seed", integer(number(&element)?, &element)?, &element);
    }
    Ok(())
}

/// Elements every flow has, with no counterpart.
const FLOW_REASONS: &[(&str, &str)] = &[
    (
        "Priority_Class",
        "nandlab's dies serve operations in order, with no I/O priority classes (a job's `priority` is for \
         priority-aware cleaning)",
    ),
    ("Seed", "every job's random stream derives from the run's seed (the device's <Seed>)"),
];

/// `<MQSim_IO_Scenarios>`: the first scenario's flows as jobs, or its trace flow.
fn map_workload(
    doc: &roxmltree::Document<'_>,
    origin: &str,
    shape: &DeviceShape,
    folder: &Path,
    mapping: &mut Mapping,
) -> Result<Option<PathBuf>, ConfigError> {
    let root = doc.root_element();
    if root.tag_name().name() != "MQSim_IO_Scenarios" {
        return Err(ConfigError::new("", format!("{origin}: the root element is not <MQSim_IO_Scenarios>")));
    }
    let top = Section::new(origin, doc, root);
    let scenario = top
        .section("IO_Scenario")
        .ok_or_else(|| ConfigError::new("", format!("{origin}: <MQSim_IO_Scenarios> has no <IO_Scenario>")))?;
    top.finish(
        &[("IO_Scenario", "nandlab runs one scenario, the first: write each other scenario in a file of its own")],
        mapping,
    );
    let flows: Vec<_> = scenario.children.iter().map(|(node, _)| *node).collect();
    let synthetic = flows.iter().filter(|node| node.tag_name().name() == "IO_Flow_Parameter_Set_Synthetic").count();
    let traces = flows.iter().filter(|node| node.tag_name().name() == "IO_Flow_Parameter_Set_Trace_Based").count();
    let count = synthetic + traces;
    if count == 0 {
        return Err(ConfigError::new("", format!("{origin}: the first <IO_Scenario> has no flow")));
    }
    if traces > 0 && count > 1 {
        return Err(ConfigError::new(
            "",
            format!(
                "{origin}: the first <IO_Scenario> has a trace-based flow beside {} other flows: nandlab replays \
                 one trace alone",
                count - 1
            ),
        ));
    }
    let mut caching = Vec::new();
    let mut occupancy = Vec::new();
    let mut trace = None;
    let mut index = 0;
    for node in flows {
        let flow = Section::new(origin, doc, node);
        match node.tag_name().name() {
            "IO_Flow_Parameter_Set_Synthetic" => {
                map_synthetic_flow(&flow, index, count, shape, mapping)?;
                occupancy.extend(flow.get("Initial_Occupancy_Percentage"));
                index += 1;
            }
            "IO_Flow_Parameter_Set_Trace_Based" => trace = Some(map_trace_flow(&flow, folder, shape, mapping)?),
            _ => {
                mapping.warn(&flow.element_of(node), "not a flow of MQSim's schema; ignored");
                continue;
            }
        }
        check_whole_device(&flow, shape)?;
        if let Some(mode) = flow.get("Device_Level_Data_Caching_Mode") {
            caching.push(mode);
        }
        flow.finish(FLOW_REASONS, mapping);
    }
    for (_, used) in &scenario.children {
        used.set(true);
    }
    scenario.finish(&[], mapping);
    map_data_cache(&caching, shape, mapping)?;
    if shape.preconditioning {
        map_occupancy(&occupancy, mapping)?;
    }
    Ok(trace)
}

/// MQSim's preconditioning fills `Initial_Occupancy_Percentage` of each
/// flow's range and brings it to steady state: nandlab's random fill of
/// that share (the largest of the flows': one fill for the device) then
/// overwrites until the WAF is steady.
fn map_occupancy(occupancy: &[Element], mapping: &mut Mapping) -> Result<(), ConfigError> {
    let mut shares = Vec::new();
    for element in occupancy {
        shares.push(fraction(element, 100.0)?);
    }
    let Some((largest, element)) = shares.iter().copied().zip(occupancy).max_by(|a, b| a.0.total_cmp(&b.0)) else {
        return Ok(());
    };
    mapping.set("precondition.kind", "random-fill", element);
    if largest == 0.0 {
        mapping.set("precondition.fill", false, element);
    } else {
        mapping.set("precondition.fill_fraction", largest, element);
    }
    for (share, other) in shares.iter().zip(occupancy) {
        if *share != largest {
            mapping.warn(other, format!("nandlab fills the device once, to the largest occupancy, {}", element.value));
        }
    }
    Ok(())
}

/// `Device_Level_Data_Caching_Mode`: a write cache is nandlab's device write
/// buffer, `Data_Cache_Capacity` bytes in pages (shared by every job); no
/// write cache, a write-through device (`timing.write_buffer_pages = 0`).
fn map_data_cache(modes: &[Element], shape: &DeviceShape, mapping: &mut Mapping) -> Result<(), ConfigError> {
    let Some(first) = modes.first() else { return Ok(()) };
    let mut write_cache = false;
    for mode in modes {
        match mode.value.as_str() {
            "TURNED_OFF" => {}
            "WRITE_CACHE" => write_cache = true,
            "READ_CACHE" | "WRITE_READ_CACHE" => {
                write_cache |= mode.value == "WRITE_READ_CACHE";
                mapping.warn(mode, "nandlab models no read cache: every read goes to the flash (or the write buffer)");
            }
            _ => return Err(invalid(mode, "expected TURNED_OFF, WRITE_CACHE, READ_CACHE or WRITE_READ_CACHE")),
        }
        if mode.value != first.value {
            mapping.warn(mode, format!("nandlab's write buffer serves every job alike, as {}", first.value));
        }
    }
    let pages = if write_cache { shape.data_cache_bytes / shape.page_bytes.max(1) } else { 0 };
    mapping.set("timing.write_buffer_pages", integer(pages, first)?, first);
    Ok(())
}

/// `Channel_IDs`, `Chip_IDs`, `Die_IDs`, `Plane_IDs`: nandlab stripes every
/// job over every parallel unit, so a flow must be given them all.
fn check_whole_device(flow: &Section, shape: &DeviceShape) -> Result<(), ConfigError> {
    for (name, count) in [
        ("Channel_IDs", shape.channels),
        ("Chip_IDs", shape.chips),
        ("Die_IDs", shape.dies),
        ("Plane_IDs", shape.planes),
    ] {
        let Some(element) = flow.get(name) else { continue };
        let mut ids: Vec<u64> = element
            .value
            .split(',')
            .map(|id| id.trim().parse())
            .collect::<Result<_, _>>()
            .map_err(|_| invalid(&element, "expected a comma-separated list of numbers"))?;
        ids.sort_unstable();
        ids.dedup();
        if !ids.iter().copied().eq(0..count) {
            return Err(invalid(
                &element,
                format!(
                    "nandlab stripes every flow over the whole device; this flow is confined to some of the {count} \
                     (list them all: 0 to {})",
                    count.saturating_sub(1)
                ),
            ));
        }
    }
    Ok(())
}

/// A synthetic flow as the `[[job]]` `flow-N`: MQSim gives flow i of n the
/// logical sectors [i/n, (i+1)/n) of the device (`Host_System.cpp`,
/// `address_range_per_flow`), of which it uses the first
/// `Working_Set_Percentage`.
fn map_synthetic_flow(
    flow: &Section,
    index: usize,
    count: usize,
    shape: &DeviceShape,
    mapping: &mut Mapping,
) -> Result<(), ConfigError> {
    const FLOW: &str = "IO_Flow_Parameter_Set_Synthetic";
    let name = format!("flow-{}", index + 1);
    let place = Element { place: format!("{} flow {}", flow.origin, index + 1), value: name.clone() };
    mapping.set_job(index, "name", name, &place);
    let (share, start) = (1.0 / f64_of(count), f64_of(index) / f64_of(count));
    let working_set = flow.required("Working_Set_Percentage", FLOW)?;
    let used = fraction(&working_set, 100.0)?;
    if used == 0.0 {
        return Err(invalid(&working_set, "a flow needs a working set"));
    }
    mapping.set_job(index, "range_start", start, &working_set);
    mapping.set_job(index, "range_end", (start + used * share).min(1.0), &working_set);
    let reads = flow.required("Read_Percentage", FLOW)?;
    mapping.set_job(index, "read_fraction", fraction(&reads, 100.0)?, &reads);
    map_addresses(flow, index, mapping)?;
    let size = flow.required("Average_Request_Size", FLOW)?;
    let sectors: u64 = number(&size)?;
    let request_bytes = sectors.checked_mul(SECTOR_BYTES).ok_or_else(|| invalid(&size, "too large"))?;
    mapping.set_job(index, "request_size", integer(request_bytes, &size)?, &size);
    map_size_distribution(flow, sectors, mapping)?;
    map_alignment(flow, sectors, shape, mapping)?;
    map_generator(flow, index, request_bytes, mapping)
}

/// `Address_Distribution`: STREAMING is sequential, RANDOM_UNIFORM uniform,
/// RANDOM_HOTCOLD sends `1 − hot` of the requests to the first `hot` of the
/// range (`IO_Flow_Synthetic.cpp`: "(100-hot)% of requests going to hot% of
/// the address space").
fn map_addresses(flow: &Section, index: usize, mapping: &mut Mapping) -> Result<(), ConfigError> {
    let distribution = flow.required("Address_Distribution", "IO_Flow_Parameter_Set_Synthetic")?;
    let hot = flow.get("Percentage_of_Hot_Region");
    match distribution.value.as_str() {
        "STREAMING" => mapping.set_job(index, "pattern", "sequential", &distribution),
        "RANDOM_UNIFORM" => {
            mapping.set_job(index, "pattern", "random", &distribution);
            mapping.set_job(index, "distribution", "uniform", &distribution);
        }
        "RANDOM_HOTCOLD" => {
            let hot = hot.ok_or_else(|| invalid(&distribution, "needs <Percentage_of_Hot_Region>"))?;
            let share = fraction(&hot, 100.0)?;
            mapping.set_job(index, "pattern", "random", &distribution);
            mapping.set_job(index, "distribution", "hot-cold", &distribution);
            mapping.set_job(index, "hot_space_fraction", share, &hot);
            mapping.set_job(index, "hot_write_fraction", 1.0 - share, &hot);
            return Ok(());
        }
        _ => return Err(invalid(&distribution, "expected STREAMING, RANDOM_UNIFORM or RANDOM_HOTCOLD")),
    }
    if let Some(hot) = hot {
        mapping.warn(&hot, format!("only RANDOM_HOTCOLD has a hot region, not {}", distribution.value));
    }
    Ok(())
}

/// `Request_Size_Distribution`: nandlab's requests have one size; NORMAL
/// with a variance is refused.
fn map_size_distribution(flow: &Section, sectors: u64, mapping: &mut Mapping) -> Result<(), ConfigError> {
    let variance = flow.count("Variance_Request_Size")?;
    let Some(distribution) = flow.get("Request_Size_Distribution") else { return Ok(()) };
    match (distribution.value.as_str(), variance) {
        ("FIXED", Some((variance, element))) if variance != 0 => {
            mapping.warn(&element, format!("a FIXED size has no variance: every request is {sectors} sectors"));
        }
        ("FIXED", _) | ("NORMAL", None) => {}
        ("NORMAL", Some((0, _))) => {}
        ("NORMAL", Some(_)) => {
            return Err(invalid(&distribution, "nandlab's requests of a job have one size: NORMAL needs variance 0"))
        }
        _ => return Err(invalid(&distribution, "expected FIXED or NORMAL")),
    }
    Ok(())
}

/// `Generated_Aligned_Addresses`, `Address_Alignment_Unit` (sectors):
/// nandlab aligns a random request to its own size.
fn map_alignment(flow: &Section, sectors: u64, shape: &DeviceShape, mapping: &mut Mapping) -> Result<(), ConfigError> {
    let aligned = flow.get("Generated_Aligned_Addresses");
    let unit = flow.get("Address_Alignment_Unit");
    let page_sectors = shape.page_bytes / SECTOR_BYTES;
    let what = format!("nandlab aligns a random request to its size ({sectors} sectors), in whole pages");
    match (aligned, unit) {
        (Some(aligned), unit) if !boolean(&aligned)? => {
            mapping.warn(&aligned, what);
            if let Some(unit) = unit {
                mapping.warn(&unit, "belongs to aligned addresses, which this flow does not ask for");
            }
        }
        (_, Some(unit)) => {
            let alignment: u64 = number(&unit)?;
            if alignment != sectors && !(alignment <= page_sectors && page_sectors.is_multiple_of(alignment.max(1))) {
                mapping.warn(&unit, what);
            }
        }
        _ => {}
    }
    Ok(())
}

/// `Synthetic_Generator_Type`: QUEUE_DEPTH keeps `Average_No_of_Reqs_in_Queue`
/// outstanding (a closed job); BANDWIDTH issues Poisson arrivals at
/// `Bandwidth` bytes/s, that is `Bandwidth / request bytes` requests/s
/// (`Host_System.cpp`'s inter-arrival time). The flow's length:
/// `Total_Requests_To_Generate`, else `Stop_Time` × the rate (BANDWIDTH only:
/// a closed loop's count in a time depends on the device).
fn map_generator(flow: &Section, index: usize, request_bytes: u64, mapping: &mut Mapping) -> Result<(), ConfigError> {
    const FLOW: &str = "IO_Flow_Parameter_Set_Synthetic";
    let generator = flow.required("Synthetic_Generator_Type", FLOW)?;
    let depth = flow.get("Average_No_of_Reqs_in_Queue");
    let bandwidth = flow.get("Bandwidth");
    let rate_iops = match generator.value.as_str() {
        "QUEUE_DEPTH" => {
            let depth = depth.ok_or_else(|| invalid(&generator, "needs <Average_No_of_Reqs_in_Queue>"))?;
            mapping.set_job(index, "queue_depth", integer(number(&depth)?, &depth)?, &depth);
            if let Some(bandwidth) = bandwidth {
                mapping.warn(&bandwidth, "a QUEUE_DEPTH flow keeps its depth outstanding; no bandwidth");
            }
            None
        }
        "BANDWIDTH" => {
            let bandwidth = bandwidth.ok_or_else(|| invalid(&generator, "needs <Bandwidth> (bytes per second)"))?;
            let bytes_per_s: u64 = number(&bandwidth)?;
            let iops = (bytes_per_s + request_bytes / 2) / request_bytes.max(1);
            if iops == 0 {
                return Err(invalid(&bandwidth, "less than one request per second"));
            }
            if !bytes_per_s.is_multiple_of(request_bytes.max(1)) {
                mapping.warn(&bandwidth, format!("rate_iops = {iops}: nandlab's rate is whole requests per second"));
            }
            mapping.set_job(index, "rate_iops", integer(iops, &bandwidth)?, &bandwidth);
            if let Some(depth) = depth {
                mapping.warn(&depth, "a BANDWIDTH flow arrives at its rate; no queue depth");
            }
            Some(iops)
        }
        _ => return Err(invalid(&generator, "expected QUEUE_DEPTH or BANDWIDTH")),
    };
    let total = flow.count("Total_Requests_To_Generate")?;
    let stop = flow.count("Stop_Time")?;
    match (total, stop, rate_iops) {
        (Some((requests, total)), stop, _) if requests > 0 => {
            mapping.set_job(index, "requests", integer(requests, &total)?, &total);
            if let Some((ns, stop)) = stop.filter(|(ns, _)| *ns > 0) {
                mapping.warn(&stop, format!("the job ends after {requests} requests, not at {ns} ns"));
            }
        }
        (_, Some((ns, stop)), Some(iops)) if ns > 0 => {
            let requests = u128::from(ns) * u128::from(iops) / 1_000_000_000;
            let requests = u64::try_from(requests).map_err(|_| invalid(&stop, "too long"))?.max(1);
            mapping.set_job(index, "requests", integer(requests, &stop)?, &stop);
        }
        (_, Some((_, stop)), None) => {
            return Err(invalid(
                &stop,
                "a QUEUE_DEPTH flow ending at a time: nandlab's jobs end after a count of requests, and a closed \
                 loop's count in a time depends on the device; set <Total_Requests_To_Generate>",
            ))
        }
        _ => return Err(invalid(&generator, "needs <Total_Requests_To_Generate> or <Stop_Time>")),
    }
    Ok(())
}

/// A trace-based flow: the trace, replayed whole, once, at nanosecond times
/// (nandlab's reader of MQSim's trace format).
fn map_trace_flow(
    flow: &Section,
    folder: &Path,
    shape: &DeviceShape,
    mapping: &mut Mapping,
) -> Result<PathBuf, ConfigError> {
    const FLOW: &str = "IO_Flow_Parameter_Set_Trace_Based";
    let path = flow.required("File_Path", FLOW)?;
    for (name, expected, why) in [
        ("Percentage_To_Be_Executed", "100", "nandlab replays the whole trace"),
        ("Relay_Count", "1", "nandlab replays the trace once (its aging replays it until steady)"),
        ("Time_Unit", "NANOSECOND", "nandlab reads MQSim traces' times in nanoseconds"),
    ] {
        if let Some(element) = flow.get(name) {
            if element.value != expected {
                return Err(invalid(&element, format!("{why}: only {expected}")));
            }
        }
    }
    if shape.preconditioning {
        if let Some(occupancy) = flow.get("Initial_Occupancy_Percentage") {
            mapping
                .warn(&occupancy, "a replay ages the device with the trace itself (precondition.kind = \"workload\")");
        }
    } else {
        flow.get("Initial_Occupancy_Percentage");
    }
    let path = PathBuf::from(&path.value);
    Ok(if path.is_relative() { folder.join(path) } else { path })
}
