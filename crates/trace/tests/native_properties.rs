//! Properties of the native format: any record sequence survives a round
//! trip, and no byte string makes the reader panic (it errors instead).

#![allow(clippy::unwrap_used)]

use nandlab_trace::{
    Flags, NativeReader, NativeWriter, Op, ProcessName, Record, Sector, SectorCount, StreamTag, TimestampNs,
    TraceHeader, TraceWrite, TIMESTAMP_NS_MAX,
};
use proptest::prelude::*;

fn record_strategy() -> impl Strategy<Value = Record> {
    // Any record a reader may yield: its end in bytes fits in 64 bits.
    let start_max = u64::MAX / 512 - u64::from(u32::MAX);
    (
        0..=TIMESTAMP_NS_MAX,
        0u8..4,
        0u8..16,
        0..=start_max,
        any::<u32>(),
        "[a-z0-9/:-]{0,20}",
        proptest::option::of(any::<u8>()),
    )
        .prop_map(|(timestamp, op, flags, start, len, name, stream)| Record {
            timestamp: TimestampNs(timestamp),
            op: Op::from_index(op).unwrap(),
            flags: Flags::from_bits(flags).unwrap(),
            start: Sector(start),
            len: SectorCount(len),
            process: ProcessName::new(&name),
            stream: stream.map(StreamTag),
        })
}

/// Records in time order, as every trace has them.
fn records_strategy(lengths: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Record>> {
    proptest::collection::vec(record_strategy(), lengths).prop_map(|mut records| {
        let mut times: Vec<TimestampNs> = records.iter().map(|record| record.timestamp).collect();
        times.sort_unstable();
        for (record, time) in records.iter_mut().zip(times) {
            record.timestamp = time;
        }
        records
    })
}

fn encode(records: &[Record]) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut writer = Box::new(NativeWriter::new(&mut bytes, "mem".into(), &TraceHeader::default()).unwrap());
    for record in records {
        writer.write(record).unwrap();
    }
    writer.finish().unwrap();
    bytes
}

proptest! {
    #[test]
    fn any_record_sequence_round_trips(records in records_strategy(0..200)) {
        let bytes = encode(&records);
        let decoded: Vec<Record> = NativeReader::new(bytes.as_slice(), "mem".into()).unwrap().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(decoded, records);
    }

    #[test]
    fn corrupted_record_bytes_are_an_error_not_a_panic(records in records_strategy(1..50), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let mut bytes = encode(&records);
        let header_end = 16 + u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
        for (position, value) in flips {
            let index = header_end + position % (bytes.len() - header_end);
            bytes[index] ^= value | 1;
        }
        let result: Result<Vec<Record>, _> = NativeReader::new(bytes.as_slice(), "mem".into()).unwrap().collect();
        if let Ok(decoded) = result {
            // A flip can land in a field and still decode; the count check
            // then still holds the sequence to the original length.
            prop_assert_eq!(decoded.len(), records.len());
        }
    }
}
