//! Latency counts in HdrHistogram's bins, recorded by a shift and an add:
//! a timed run records one latency per request, and
//! `Histogram::saturating_record` (range checks, a fallible index, min and
//! max tracking) cost several times that. The report's histograms are made
//! from the counts once, at the end.

use hdrhistogram::Histogram;

/// Latencies up to an hour of simulated time are recorded exactly to three
/// significant digits; longer ones saturate.
const LATENCY_NS_MAX: u64 = 3_600_000_000_000;

/// Significant digits of the latency histograms.
const SIGNIFICANT_DIGITS: u8 = 3;

/// log2 of half a bucket's sub-buckets: three significant digits need 2,000
/// distinct values per bucket, 2^11 sub-buckets, of which a bucket past the
/// first uses the upper half.
const HALF_BUCKET_SHIFT: u32 = 10;

/// Values below this fit the first bucket at unit resolution.
const FIRST_BUCKET_MASK: u64 = (1 << (HALF_BUCKET_SHIFT + 1)) - 1;

/// An empty histogram of latencies in nanoseconds, 1 ns to [`LATENCY_NS_MAX`].
fn histogram() -> Histogram<u64> {
    // The bounds are constants known to be valid.
    #[allow(clippy::expect_used)]
    Histogram::new_with_bounds(1, LATENCY_NS_MAX, SIGNIFICANT_DIGITS).expect("valid histogram bounds")
}

/// How many latencies fell into each bin of [`histogram`]'s layout, the
/// bins HdrHistogram numbers for a lowest value of 1 (unit magnitude 0):
/// bucket `b` holds values `2^(b + 10) ..< 2^(b + 11)` (the first bucket
/// everything below 2^11) in steps of `2^b`.
#[derive(Clone, Debug)]
pub struct LatencyCounts {
    counts: Vec<u64>,
    /// Latencies counted.
    len: u64,
    /// The bin of [`LATENCY_NS_MAX`], where longer latencies beyond the
    /// last bin go (HdrHistogram's saturation).
    saturated: usize,
}

impl Default for LatencyCounts {
    fn default() -> Self {
        let saturated = bin(LATENCY_NS_MAX);
        // The last bucket's bins: as many as HdrHistogram allocates.
        let bins = ((saturated >> HALF_BUCKET_SHIFT) + 1) << HALF_BUCKET_SHIFT;
        Self { counts: vec![0; bins], len: 0, saturated }
    }
}

/// The bin of `value` (at least 1).
#[inline]
fn bin(value: u64) -> usize {
    let bucket = 63 - HALF_BUCKET_SHIFT - (value | FIRST_BUCKET_MASK).leading_zeros();
    // Below 2^43 bins: the value shifted down to 11 bits plus 1,024 per bucket.
    ((bucket << HALF_BUCKET_SHIFT) as u64 + (value >> bucket)) as usize
}

/// The lowest value of bin `bin`.
fn lowest_value(bin: usize) -> u64 {
    let bucket = (bin >> HALF_BUCKET_SHIFT).saturating_sub(1);
    let sub_bucket = bin - (bucket << HALF_BUCKET_SHIFT);
    (sub_bucket as u64) << bucket
}

impl LatencyCounts {
    /// Counts one latency of `latency_ns` (at least 1).
    #[inline]
    pub fn record(&mut self, latency_ns: u64) {
        debug_assert!(latency_ns >= 1);
        let bin = bin(latency_ns);
        let bin = if bin < self.counts.len() { bin } else { self.saturated };
        self.counts[bin] += 1;
        self.len += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &Self) {
        if other.is_empty() {
            return;
        }
        for (count, &more) in self.counts.iter_mut().zip(&other.counts) {
            *count += more;
        }
        self.len += other.len;
    }

    /// The histogram `Histogram::saturating_record` of every latency
    /// counted would have made: the same bins, counts, and minimum and
    /// maximum (HdrHistogram reports both as a bin's bound).
    pub fn histogram(&self) -> Histogram<u64> {
        let mut histogram = histogram();
        for (bin, &count) in self.counts.iter().enumerate() {
            if count > 0 {
                histogram.saturating_record_n(lowest_value(bin), count);
            }
        }
        histogram
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Values at every bucket's edges, random values of every magnitude,
    /// and values beyond the histogram's range.
    fn latencies() -> Vec<u64> {
        let mut values: Vec<u64> = (1..5_000).collect();
        for shift in 10..64 {
            let edge = 1u64 << shift;
            values.extend([edge - 1, edge, edge + 1, edge.saturating_mul(3) / 2]);
        }
        values.extend([LATENCY_NS_MAX - 1, LATENCY_NS_MAX, LATENCY_NS_MAX + 1, u64::MAX]);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(17);
        for _ in 0..20_000 {
            let magnitude = rng.random_range(0..64);
            values.push(rng.random_range(1..=u64::MAX >> magnitude));
        }
        values
    }

    #[test]
    fn counted_latencies_make_the_histogram_recording_them_makes() {
        let values = latencies();
        for chunk in [1, 7, values.len()] {
            for values in values.chunks(chunk).take(50) {
                let mut counts = LatencyCounts::default();
                let mut recorded = histogram();
                for &value in values {
                    counts.record(value);
                    recorded.saturating_record(value);
                }
                let made = counts.histogram();
                assert_eq!(made, recorded, "{values:?}");
                assert_eq!((made.min(), made.max(), made.len()), (recorded.min(), recorded.max(), recorded.len()));
                for quantile in [0.0, 0.5, 0.99, 0.999, 1.0] {
                    assert_eq!(made.value_at_quantile(quantile), recorded.value_at_quantile(quantile));
                }
                assert!((made.mean() - recorded.mean()).abs() <= 1e-9 * recorded.mean().abs());
            }
        }
    }

    #[test]
    fn summed_counts_make_the_summed_histogram() {
        let values = latencies();
        let (mut first, mut second) = (LatencyCounts::default(), LatencyCounts::default());
        let mut recorded = histogram();
        for (index, &value) in values.iter().enumerate() {
            if index % 3 == 0 { &mut first } else { &mut second }.record(value);
            recorded.saturating_record(value);
        }
        first.add(&second);
        assert_eq!(first.histogram(), recorded);
    }
}
