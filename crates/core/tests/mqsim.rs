//! MQSim's input files (`config::mqsim`): each element lands on its key with
//! MQSim's semantics, every element without a counterpart is warned about,
//! and what nandlab cannot represent is refused naming file, line and
//! element. The XML files in tests/mqsim are our own, after MQSim's schema.

use nandlab_core::config::mqsim::{self, MqsimInput};
use nandlab_core::config::{from_sources, Document};
use nandlab_core::ftl::{FreeBlockOrder, VictimPolicy};
use nandlab_core::Config;
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mqsim").join(name)
}

fn read(ssd: &str, workload: &str) -> MqsimInput {
    mqsim::read(&data(ssd), &data(workload)).unwrap_or_else(|error| panic!("{ssd} {workload}: {error}"))
}

fn config(input: &MqsimInput) -> Config {
    from_sources(None, Some(Document::Table(input.document.clone())), &[], None).expect("valid").0
}

fn warned(input: &MqsimInput, element: &str) -> bool {
    input.warnings.iter().any(|warning| warning.element.ends_with(&format!("<{element}>")))
}

/// Replaces `from` by `to` in a test file's text and maps it with the other file.
fn mapped_with(ssd_edit: (&str, &str), workload_edit: (&str, &str)) -> Result<MqsimInput, String> {
    let ssd = std::fs::read_to_string(data("ssd-mlc.xml")).expect("ssd").replace(ssd_edit.0, ssd_edit.1);
    let workload = std::fs::read_to_string(data("workload-two-flows.xml"))
        .expect("workload")
        .replace(workload_edit.0, workload_edit.1);
    mqsim::parse((&ssd, "ssd.xml"), (&workload, "workload.xml"), Path::new(".")).map_err(|error| error.to_string())
}

#[test]
fn the_device_maps_with_mqsims_semantics() {
    let input = read("ssd-mlc.xml", "workload-two-flows.xml");
    let config = config(&input);
    let device = &config.device;
    assert_eq!((device.channels, device.chips_per_channel, device.dies_per_chip, device.planes_per_die), (2, 2, 1, 2));
    assert_eq!((device.blocks_per_plane, device.pages_per_block, device.page_size), (128, 32, 8192));
    // Overprovisioning_Ratio keeps 1 − 0.2 of the 32,768 physical pages logical.
    assert_eq!(device.logical_pages, Some(26_214));
    assert_eq!(device.pe_cycles, 5000);
    assert_eq!(config.seed, 7);
    // MLC: the mean of the LSB and MSB latencies; the bus is MT/s × bytes per transfer.
    assert_eq!((config.timing.read_ns, config.timing.program_ns, config.timing.erase_ns), (70_000, 900_000, 3_500_000));
    assert_eq!(config.timing.channel_bytes_per_s, 800_000_000);
    // A write cache of 4 MiB in 8 KiB pages.
    assert_eq!(config.timing.write_buffer_pages, 512);
    // GC below ⌊0.1 × 128⌋ = 12 free blocks; RGA's set is log2(128) = 7 blocks.
    assert_eq!(config.ftl.gc_threshold_blocks, 12);
    assert_eq!(config.ftl.gc_policy, VictimPolicy::DChoices);
    assert_eq!(config.ftl.d_choices, 7);
    assert_eq!(config.ftl.free_block_order, FreeBlockOrder::LeastWorn);
    // 65,536 bytes of 6-byte entries (⌈(2 × 15 + 16) / 8⌉) over 26,214 logical pages.
    let share = (65_536 / 6) as f64 / 26_214.0;
    assert!((config.ftl.map_cache_fraction - share).abs() < 1e-12, "{}", config.ftl.map_cache_fraction);
    assert!(config.precondition.enabled);
    assert!((config.precondition.fill_fraction - 0.6).abs() < 1e-12);
    for element in
        ["Static_Wearleveling_Enabled", "Caching_Mechanism", "Data_Cache_DRAM_Row_Size", "Page_Read_Latency_LSB"]
    {
        assert!(warned(&input, element), "{element}: {:?}", input.warnings);
    }
    // PWDC is not the channel-first striping nandlab's static allocation has.
    assert!(warned(&input, "Plane_Allocation_Scheme"));
}

#[test]
fn synthetic_flows_become_jobs_on_their_share_of_the_space() {
    let input = read("ssd-mlc.xml", "workload-two-flows.xml");
    let config = config(&input);
    let [reader, writer] = config.jobs.as_slice() else { panic!("two jobs: {:?}", config.jobs) };
    assert_eq!((reader.name.as_str(), writer.name.as_str()), ("flow-1", "flow-2"));
    // Flow 1 of 2 has the first half of the space, of which its working set is 80 %.
    assert_eq!((reader.range_start, reader.range_end), (0.0, 0.4));
    assert_eq!((writer.range_start, writer.range_end), (0.5, 1.0));
    assert_eq!((reader.queue_depth, reader.rate_iops, reader.workload.requests), (8, None, Some(3000)));
    assert!((reader.workload.read_fraction - 1.0).abs() < 1e-12);
    // 16 sectors are one 8 KiB page; 32 are two.
    assert_eq!((reader.workload.request_pages, writer.workload.request_pages), (1, 2));
    // 16,384,000 bytes/s of 16 KiB requests for 2 s.
    assert_eq!((writer.rate_iops, writer.workload.requests), (Some(1000), Some(2000)));
    // The hot 20 % of the range takes the other 80 % of the requests.
    assert!((writer.workload.hot_space_fraction - 0.2).abs() < 1e-12);
    assert!((writer.workload.hot_write_fraction - 0.8).abs() < 1e-12);
    for element in ["Priority_Class", "Seed", "Intensity", "IO_Scenario", "Initial_Occupancy_Percentage"] {
        assert!(warned(&input, element), "{element}: {:?}", input.warnings);
    }
    assert!(input.trace.is_none());
}

#[test]
fn every_warning_names_element_value_and_why() {
    let input = read("ssd-vs-mqsim.xml", "workload-trace.xml");
    for element in ["PCIe_Lane_Count", "Queue_Fetch_Size", "Page_Metadat_Capacity", "CMT_Capacity", "Priority_Class"] {
        let warning = input.warnings.iter().find(|warning| warning.element.ends_with(&format!("<{element}>")));
        let warning = warning.unwrap_or_else(|| panic!("{element}: {:?}", input.warnings));
        assert!(warning.element.contains("ssd-vs-mqsim.xml:") || warning.element.contains("workload-trace.xml:"));
        assert!(!warning.value.is_empty() && !warning.why.is_empty(), "{warning}");
    }
    // Mapped elements are not warned about.
    for element in ["Flash_Channel_Count", "Overprovisioning_Ratio", "GC_Exec_Threshold", "File_Path", "Channel_IDs"] {
        assert!(!warned(&input, element), "{element}");
    }
    assert_eq!(input.trace, Some(data("requests.trace")));
}

/// The configuration scripts/vs_mqsim.py gives both simulators loads
/// through its MQSim files as the hand-built nandlab file it writes.
#[test]
fn the_vs_mqsim_device_equals_its_hand_built_configuration() {
    let input = read("ssd-vs-mqsim.xml", "workload-trace.xml");
    let mapped = config(&input);
    let hand_built = r#"
        preset = "small"
        [device]
        channels = 4
        chips_per_channel = 1
        dies_per_chip = 1
        planes_per_die = 1
        blocks_per_plane = 128
        pages_per_block = 64
        page_size = 4096
        logical_pages = 24576
        [ftl]
        gc_policy = "greedy"
        gc_threshold_blocks = 10
        allocation = "static"
        [precondition]
        enabled = false
        [timing]
        read_ns = 40000
        program_ns = 200000
        erase_ns = 2000000
        channel_bytes_per_s = 200000000
        write_buffer_pages = 0
    "#;
    let expected = from_sources(None, Some(Document::Toml { text: hand_built, origin: "vs_mqsim" }), &[], None)
        .expect("hand-built")
        .0;
    let mut device = mapped.device.clone();
    device.pe_cycles = expected.device.pe_cycles;
    device.over_provisioning = expected.device.over_provisioning;
    assert_eq!(device, expected.device);
    assert_eq!(mapped.ftl, expected.ftl);
    assert_eq!(mapped.timing, expected.timing);
    assert_eq!(mapped.precondition.enabled, expected.precondition.enabled);
}

#[test]
fn what_nandlab_cannot_represent_is_refused_naming_the_element() {
    for (ssd, workload, needle) in [
        (("PAGE_LEVEL", "HYBRID"), ("", ""), "ssd.xml:13 <Address_Mapping> = HYBRID"),
        (("", ""), ("<Channel_IDs>0,1</Channel_IDs>", "<Channel_IDs>1</Channel_IDs>"), "<Channel_IDs> = 1"),
        (("", ""), ("<Total_Requests_To_Generate>3000<", "<Total_Requests_To_Generate>0<"), "<Stop_Time>"),
        (("<Flash_Technology>MLC<", "<Flash_Technology>QLC<"), ("", ""), "expected SLC, MLC or TLC"),
        (("<Block_No_Per_Plane>128</Block_No_Per_Plane>", ""), ("", ""), "has no <Block_No_Per_Plane>"),
        (("</Execution_Parameter_Set>", ""), ("", ""), "not XML"),
    ] {
        let error = mapped_with(ssd, workload).expect_err(needle);
        assert!(error.contains(needle), "{needle}: {error}");
    }
    // A key out of nandlab's bounds is blamed on the element that set it.
    let ssd = std::fs::read_to_string(data("ssd-vs-mqsim.xml")).expect("ssd").replace(">4096<", ">1000<");
    let workload = std::fs::read_to_string(data("workload-trace.xml")).expect("workload");
    let error = mqsim::parse((&ssd, "ssd.xml"), (&workload, "workload.xml"), Path::new(".")).expect_err("1000");
    assert!(error.to_string().contains("<Page_Capacity> = 1000 (nandlab's device.page_size)"), "{error}");
    // NORMAL sizes with a variance: a job's requests have one size.
    let normal = ("FIXED</Request_Size_Distribution>", "NORMAL</Request_Size_Distribution>");
    let error =
        mapped_with_both(normal, ("<Variance_Request_Size>0<", "<Variance_Request_Size>4<")).expect_err("NORMAL");
    assert!(error.contains("<Request_Size_Distribution> = NORMAL"), "{error}");
    // 12 sectors are 6 KiB, no whole number of 8 KiB pages: the nearest whole-page size is named.
    let error = mapped_with(("", ""), ("<Average_Request_Size>16<", "<Average_Request_Size>12<")).expect_err("12");
    assert!(error.contains("<Average_Request_Size> = 12"), "{error}");
    assert!(error.contains("nearest whole-page size is 8192 bytes"), "{error}");
}

/// Two edits of the workload file, the device as given.
fn mapped_with_both(first: (&str, &str), second: (&str, &str)) -> Result<MqsimInput, String> {
    let ssd = std::fs::read_to_string(data("ssd-mlc.xml")).expect("ssd");
    let workload = std::fs::read_to_string(data("workload-two-flows.xml"))
        .expect("workload")
        .replacen(first.0, first.1, 1)
        .replacen(second.0, second.1, 1);
    mqsim::parse((&ssd, "ssd.xml"), (&workload, "workload.xml"), Path::new(".")).map_err(|error| error.to_string())
}
