#!/usr/bin/env python3
"""nandlab and MQSim on the same small traces (run by scripts/vs-mqsim.sh).

    python3 scripts/vs_mqsim.py MQSIM_BINARY NANDLAB_BINARY WORK_DIR

Device (both): 4 channels x 1 chip x 1 die x 1 plane, 128 blocks of 64 pages
of 4 KiB (32,768 physical pages); 24,576 logical pages (MQSim's
Overprovisioning_Ratio 0.25 keeps 1 - 0.25 of the physical pages logical, so
nandlab's rho = 1/3); SLC 40 us read, 200 us program, 2 ms erase; channels of 1
byte at 200 MT/s (20.48 us per page); greedy GC while a plane has fewer than
10 free blocks (MQSim's floor: SSD_Device.cpp passes
max_ongoing_gc_reqs_per_plane = 10, and GC_and_WL_Unit_Base raises the
threshold to it; at Overprovisioning_Ratio 0.125 MQSim ran out of free blocks
after the fill); static allocation (logical page mod unit, as MQSim's CWDP);
no write cache, mapping table in RAM, no wear-levelling, no GC preemption or
suspension; both start empty.

Traces (MQSim's ASCII format, which nandlab reads with --from mqsim), requests
of one 4 KiB page, far enough apart that a request never queues behind
another host request:
* fill: every logical page once, in order, 1 ms apart;
* fill + K device writes of uniform random writes (seeded), 2 ms apart, for
  K = 1 and K = 5, 10 ms apart: the difference between the two counts GC copies over the
  last 4 device writes, which is the steady state the analytic model gives;
* fill + 20,000 uniform random reads, 1 ms apart.

Printed: GC copies and erases from each simulator (nandlab: counting mode;
MQSim: Total_GC_Executions x Average_Page_Movement_For_GC), write and read
latencies (nandlab: timed replay at the trace's timestamps, percentiles of
the whole trace; MQSim reports only the mean, min and max device response
time of a flow, so the mean of the part after the fill is derived from the
fill's own run: (mean x requests - fill mean x fill requests) / the rest,
to a microsecond, as MQSim rounds its means), and the
analytic values: no GC and t_prog + transfer per write for the fill,
t_read + transfer per read, and the greedy mean-field WAF (docs/validation.md)
at the device's rho and at each simulator's rho_eff once its reserve is held
back (MQSim keeps one more open block per plane).
"""

import json
import math
import os
import random
import re
import subprocess
import sys
import time

CHANNELS, BLOCKS, PAGES, PAGE_BYTES = 4, 128, 64, 4096
PHYSICAL = CHANNELS * BLOCKS * PAGES
OP = 0.25
LOGICAL = int(PHYSICAL * (1 - OP))  # MQSim's Address_Mapping_Unit_Base
SECTORS = PAGE_BYTES // 512
READ_NS, PROGRAM_NS, ERASE_NS = 40_000, 200_000, 2_000_000
CHANNEL_MTS = 200  # 1 byte wide: 200 MB/s
TRANSFER_NS = PAGE_BYTES * 1000 / CHANNEL_MTS
GC_THRESHOLD_BLOCKS = 10
# MQSim's other open block per plane: the translation write frontier, taken
# from the pool even with Ideal_Mapping_Table (Flash_Block_Manager_Base).
MQSIM_EXTRA_OPEN_BLOCKS = 1

MQSIM_SSD = f"""<?xml version="1.0" encoding="us-ascii"?>
<Execution_Parameter_Set>
<Host_Parameter_Set>
<PCIe_Lane_Bandwidth>1.0</PCIe_Lane_Bandwidth><PCIe_Lane_Count>4</PCIe_Lane_Count>
<SATA_Processing_Delay>400000</SATA_Processing_Delay>
<Enable_ResponseTime_Logging>false</Enable_ResponseTime_Logging>
<ResponseTime_Logging_Period_Length>1000000</ResponseTime_Logging_Period_Length>
</Host_Parameter_Set>
<Device_Parameter_Set>
<Seed>321</Seed><Enabled_Preconditioning>false</Enabled_Preconditioning>
<Memory_Type>FLASH</Memory_Type><HostInterface_Type>NVME</HostInterface_Type>
<IO_Queue_Depth>65535</IO_Queue_Depth><Queue_Fetch_Size>512</Queue_Fetch_Size>
<Caching_Mechanism>SIMPLE</Caching_Mechanism><Data_Cache_Sharing_Mode>SHARED</Data_Cache_Sharing_Mode>
<Data_Cache_Capacity>268435456</Data_Cache_Capacity><Data_Cache_DRAM_Row_Size>8192</Data_Cache_DRAM_Row_Size>
<Data_Cache_DRAM_Data_Rate>100</Data_Cache_DRAM_Data_Rate><Data_Cache_DRAM_Data_Busrt_Size>1</Data_Cache_DRAM_Data_Busrt_Size>
<Data_Cache_DRAM_tRCD>13</Data_Cache_DRAM_tRCD><Data_Cache_DRAM_tCL>13</Data_Cache_DRAM_tCL><Data_Cache_DRAM_tRP>13</Data_Cache_DRAM_tRP>
<Address_Mapping>PAGE_LEVEL</Address_Mapping><Ideal_Mapping_Table>true</Ideal_Mapping_Table>
<CMT_Capacity>268435456</CMT_Capacity><CMT_Sharing_Mode>SHARED</CMT_Sharing_Mode>
<Plane_Allocation_Scheme>CWDP</Plane_Allocation_Scheme>
<Transaction_Scheduling_Policy>OUT_OF_ORDER</Transaction_Scheduling_Policy>
<Overprovisioning_Ratio>{OP}</Overprovisioning_Ratio>
<GC_Exec_Threshold>{GC_THRESHOLD_BLOCKS / BLOCKS + 1e-9:.10f}</GC_Exec_Threshold>
<GC_Block_Selection_Policy>GREEDY</GC_Block_Selection_Policy><Use_Copyback_for_GC>false</Use_Copyback_for_GC>
<Preemptible_GC_Enabled>false</Preemptible_GC_Enabled><GC_Hard_Threshold>0.005</GC_Hard_Threshold>
<Dynamic_Wearleveling_Enabled>false</Dynamic_Wearleveling_Enabled>
<Static_Wearleveling_Enabled>false</Static_Wearleveling_Enabled><Static_Wearleveling_Threshold>100</Static_Wearleveling_Threshold>
<Preferred_suspend_erase_time_for_read>700000</Preferred_suspend_erase_time_for_read>
<Preferred_suspend_erase_time_for_write>700000</Preferred_suspend_erase_time_for_write>
<Preferred_suspend_write_time_for_read>100000</Preferred_suspend_write_time_for_read>
<Flash_Channel_Count>{CHANNELS}</Flash_Channel_Count><Flash_Channel_Width>1</Flash_Channel_Width>
<Channel_Transfer_Rate>{CHANNEL_MTS}</Channel_Transfer_Rate><Chip_No_Per_Channel>1</Chip_No_Per_Channel>
<Flash_Comm_Protocol>NVDDR2</Flash_Comm_Protocol>
<Flash_Parameter_Set>
<Flash_Technology>SLC</Flash_Technology><CMD_Suspension_Support>NONE</CMD_Suspension_Support>
<Page_Read_Latency_LSB>{READ_NS}</Page_Read_Latency_LSB><Page_Read_Latency_CSB>{READ_NS}</Page_Read_Latency_CSB>
<Page_Read_Latency_MSB>{READ_NS}</Page_Read_Latency_MSB>
<Page_Program_Latency_LSB>{PROGRAM_NS}</Page_Program_Latency_LSB><Page_Program_Latency_CSB>{PROGRAM_NS}</Page_Program_Latency_CSB>
<Page_Program_Latency_MSB>{PROGRAM_NS}</Page_Program_Latency_MSB>
<Block_Erase_Latency>{ERASE_NS}</Block_Erase_Latency><Block_PE_Cycles_Limit>100000</Block_PE_Cycles_Limit>
<Suspend_Erase_Time>700000</Suspend_Erase_Time><Suspend_Program_Time>100000</Suspend_Program_Time>
<Die_No_Per_Chip>1</Die_No_Per_Chip><Plane_No_Per_Die>1</Plane_No_Per_Die>
<Block_No_Per_Plane>{BLOCKS}</Block_No_Per_Plane><Page_No_Per_Block>{PAGES}</Page_No_Per_Block>
<Page_Capacity>{PAGE_BYTES}</Page_Capacity><Page_Metadat_Capacity>448</Page_Metadat_Capacity>
</Flash_Parameter_Set>
</Device_Parameter_Set>
</Execution_Parameter_Set>
"""

MQSIM_WORKLOAD = """<?xml version="1.0" encoding="us-ascii"?>
<MQSim_IO_Scenarios><IO_Scenario><IO_Flow_Parameter_Set_Trace_Based>
<Priority_Class>HIGH</Priority_Class><Device_Level_Data_Caching_Mode>TURNED_OFF</Device_Level_Data_Caching_Mode>
<Channel_IDs>0,1,2,3</Channel_IDs><Chip_IDs>0</Chip_IDs><Die_IDs>0</Die_IDs><Plane_IDs>0</Plane_IDs>
<Initial_Occupancy_Percentage>0</Initial_Occupancy_Percentage>
<File_Path>{trace}</File_Path><Percentage_To_Be_Executed>100</Percentage_To_Be_Executed>
<Relay_Count>1</Relay_Count><Time_Unit>NANOSECOND</Time_Unit>
</IO_Flow_Parameter_Set_Trace_Based></IO_Scenario></MQSim_IO_Scenarios>
"""

NANDLAB_DEVICE = f"""# The device of scripts/vs_mqsim.py (MQSim's geometry and timing).
preset = "small"
[device]
channels = {CHANNELS}
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 1
blocks_per_plane = {BLOCKS}
pages_per_block = {PAGES}
page_size = {PAGE_BYTES}
logical_pages = {LOGICAL}
[ftl]
gc_policy = "greedy"
gc_threshold_blocks = {GC_THRESHOLD_BLOCKS}
allocation = "static"
[precondition]
enabled = false
[timing]
read_ns = {READ_NS}
program_ns = {PROGRAM_NS}
erase_ns = {ERASE_NS}
channel_bytes_per_s = {CHANNEL_MTS * 1_000_000}
write_buffer_pages = 0
"""


def harmonic(x):
    """H(x), linear between integers (as ftl::analytic::greedy_waf)."""
    whole = math.floor(x)
    below = sum(1.0 / k for k in range(1, whole + 1))
    return below + (x - whole) / (whole + 1)


def greedy_waf(pages_per_block, rho):
    """The mean-field greedy WAF of crates/core/src/ftl/analytic.rs::greedy_waf."""
    b, alpha = float(pages_per_block), 1.0 + rho
    h_b = harmonic(b)
    low, high = 0.0, b * (1 - 1e-12)
    for _ in range(200):
        mid = (low + high) / 2
        if b * (h_b - harmonic(mid)) / (alpha * (b - mid)) - 1.0 > 0:
            low = mid
        else:
            high = mid
    return b / (b - low)


def write_trace(path, requests):
    """requests: (time_ns, logical page, 0 write | 1 read)."""
    with open(path, "w", encoding="ascii") as handle:
        for time_ns, page, kind in requests:
            handle.write(f"{time_ns} 0 {page * SECTORS} {SECTORS} {kind}\n")


def fill_requests():
    """Every logical page once, in order, 1 ms apart."""
    return [(i * 1_000_000, page, 0) for i, page in enumerate(range(LOGICAL))]


def random_write_requests(start_ns, count, gap_ns=10_000_000, seed=30):
    """count uniform random single-page writes (seeded), gap_ns apart from start_ns."""
    rng = random.Random(seed)
    return [(start_ns + i * gap_ns, rng.randrange(LOGICAL), 0) for i in range(count)]


def traces(work):
    fill = fill_requests()
    start = len(fill) * 1_000_000
    random_writes = random_write_requests(start, 5 * LOGICAL)
    rng = random.Random(31)
    reads = [(start + i * 1_000_000, rng.randrange(LOGICAL), 1) for i in range(20_000)]
    made = {
        "fill": fill,
        "random-1dw": fill + random_writes[:LOGICAL],
        "random-5dw": fill + random_writes,
        "reads": fill + reads,
    }
    paths = {}
    for name, requests in made.items():
        paths[name] = os.path.join(work, f"{name}.mqsim")
        write_trace(paths[name], requests)
    return paths


def mqsim_command(binary, work, name, trace):
    """Writes MQSim's two input files for a run named name (an empty start)
    and returns its command line (run it in work)."""
    ssd = os.path.join(work, "mqsim-ssd.xml")
    with open(ssd, "w", encoding="ascii") as handle:
        handle.write(MQSIM_SSD)
    workload = os.path.join(work, f"mqsim-{name}.xml")
    with open(workload, "w", encoding="ascii") as handle:
        handle.write(MQSIM_WORKLOAD.format(trace=trace))
    return [binary, "-i", ssd, "-w", workload]


def mqsim_results(work, name):
    """The counts and response times of MQSim's output file of the run name."""
    with open(os.path.join(work, f"mqsim-{name}_scenario_1.xml"), encoding="ascii") as handle:
        text = handle.read()

    def number(attribute):
        found = re.search(rf"<{attribute}>([^<]*)</{attribute}>", text) or re.search(rf'{attribute}="([^"]*)"', text)
        return float(found.group(1)) if found and found.group(1) not in ("nan", "-nan", "inf") else 0.0

    executions = number("Total_GC_Executions")
    return {
        "requests": number("Request_Count"),
        "gc_copies": round(executions * number("Average_Page_Movement_For_GC")),
        "erases": number("Issued_Flash_Erase_CMD"),
        "programs": number("Issued_Flash_Program_CMD"),
        "flash_reads": number("Issued_Flash_Read_CMD"),
        "mean_us": number("Device_Response_Time"),
        "min_us": number("Min_Device_Response_Time"),
        "max_us": number("Max_Device_Response_Time"),
    }


def run_mqsim(binary, work, name, trace):
    subprocess.run(mqsim_command(binary, work, name, trace), cwd=work, check=True, capture_output=True)
    return mqsim_results(work, name)


def nandlab_command(binary, work, trace, timed, json_path="-"):
    """Writes nandlab's device file and returns the replay of trace on it,
    its JSON report into json_path (- is standard output); timed: the timed
    replay at the trace's timestamps, else counting mode."""
    device = os.path.join(work, "nandlab-device.toml")
    with open(device, "w", encoding="ascii") as handle:
        handle.write(NANDLAB_DEVICE)
    timing = ["--timing", "on", "--arrival", "trace"] if timed else []
    return [binary, "replay", trace, device, "--format", "mqsim", "--json", json_path, *timing]


def run_nandlab(binary, work, name, trace):
    def replay(timed):
        command = nandlab_command(binary, work, trace, timed)
        return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)

    counted, timed = replay(False), replay(True)
    counters = counted["measured"]
    latency = timed["timed"]["latency"]
    kind = "read" if name == "reads" else "write"
    return {
        "gc_copies": counters["gc_page_copies"],
        "erases": counters["erases"],
        "programs": counters["flash_pages_programmed"],
        "latency": {key: latency[kind][key] for key in ("mean_us", "p50_us", "p99_us", "p999_us", "max_us")},
    }


def provenance(mqsim, nandlab, command="scripts/vs-mqsim.sh MQSIM_CHECKOUT"):
    """What ran: the command, date, nandlab's version and commit (-dirty when
    the tree was) and MQSim's commit (MQSIM_COMMIT, or the checkout's git
    HEAD when it is one)."""

    def output(*argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, check=False).stdout.strip()
        except OSError:
            return ""

    checkout = os.path.dirname(mqsim)
    return {
        "command": command,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "nandlab": output(nandlab, "--version"),
        "nandlab_commit": output("git", "-C", os.path.dirname(os.path.abspath(__file__)), "describe", "--always", "--dirty"),
        "mqsim_commit": os.environ.get("MQSIM_COMMIT") or output("git", "-C", checkout, "rev-parse", "HEAD") or "unknown",
    }


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    mqsim, nandlab, work = argv[1:]
    paths = traces(work)
    results = {}
    for name, trace in paths.items():
        results[name] = {"mqsim": run_mqsim(mqsim, work, name, trace), "nandlab": run_nandlab(nandlab, work, name, trace)}
    rho = PHYSICAL / LOGICAL - 1

    def rho_eff(reserve_blocks):
        """docs/validation.md, "Reserve accounting": the free-block threshold
        plus the open blocks (half written on average) held back per unit."""
        return (PHYSICAL - reserve_blocks * PAGES * CHANNELS) / LOGICAL - 1

    nandlab_reserve = GC_THRESHOLD_BLOCKS + 1
    mqsim_reserve = GC_THRESHOLD_BLOCKS + 1 + MQSIM_EXTRA_OPEN_BLOCKS
    steady = {}
    for simulator in ("mqsim", "nandlab"):
        extra = results["random-5dw"][simulator]["gc_copies"] - results["random-1dw"][simulator]["gc_copies"]
        steady[simulator] = 1 + extra / (4 * LOGICAL)
    analytic = {
        "greedy_waf_rho": greedy_waf(PAGES, rho),
        "greedy_waf_rho_eff_nandlab": greedy_waf(PAGES, rho_eff(nandlab_reserve)),
        "greedy_waf_rho_eff_mqsim": greedy_waf(PAGES, rho_eff(mqsim_reserve)),
        "rho": rho,
        "rho_eff_nandlab": rho_eff(nandlab_reserve),
        "rho_eff_mqsim": rho_eff(mqsim_reserve),
        "write_us_unqueued": (PROGRAM_NS + TRANSFER_NS) / 1000,
        "read_us_unqueued": (READ_NS + TRANSFER_NS) / 1000,
    }
    fill = results["fill"]["mqsim"]
    for name in ("random-1dw", "random-5dw", "reads"):
        requests = sum(1 for _ in open(paths[name], encoding="ascii"))
        mqsim_run = results[name]["mqsim"]
        mqsim_run["mean_us_after_fill"] = (mqsim_run["mean_us"] * requests - fill["mean_us"] * LOGICAL) / (
            requests - LOGICAL
        )
    document = {
        "provenance": provenance(mqsim, nandlab),
        "results": results,
        "steady_waf_last_4_device_writes": steady,
        "analytic": analytic,
    }
    with open(os.path.join(work, "vs-mqsim.json"), "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2)
    print(json.dumps(document, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
