//! The write classifier: a small policy that labels each write with a class
//! from what a real host stack knows about it — the issuing process, where
//! it lands (the file system journal's LBA range) and its request flags.
//! The host-level FTL ([`crate::host::pblk`]) gives each class its own open
//! line when separation is on, which generalises multi-stream placement.
//!
//! A classifier is an ordered list of [`Rule`]s; the first rule that matches
//! names the class, and a write no rule matches is `data`. Users add classes
//! by adding rules: metadata by the `META` flag, hot/cold by how often the
//! pages were written before.
//!
//! Journal detection (Son and Ahn 2021, "separating the journal from other
//! file data"): a write is journal when it comes from a `jbd2/...` thread or
//! lands inside the journal's extents. Both are needed on a loop device,
//! where most requests are issued by `kworker` threads on behalf of jbd2.

use crate::host::discard::SectorRange;
use serde::{Deserialize, Serialize};

/// A class index into [`Classifier::classes`]; class 0 is always `data`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ClassId(pub u8);

/// Classes a classifier may name; line bookkeeping keeps one bit per class.
pub const CLASSES_MAX: usize = 8;

/// Request flags a block-layer trace records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteFlags {
    pub sync: bool,
    pub fua: bool,
    pub preflush: bool,
    /// `REQ_META`: the file system marked the request as metadata.
    pub meta: bool,
}

/// What the host knows about one write request.
#[derive(Clone, Copy, Debug)]
pub struct WriteInfo {
    pub sectors: SectorRange,
    /// Issued by the journal thread (`jbd2/...`; the trace source decides).
    pub journal_thread: bool,
    pub flags: WriteFlags,
}

/// One test of a write. `observe` lets stateful rules (hot/cold) learn from
/// every write, whichever rule classified it.
#[derive(Clone, Debug)]
pub enum Rule {
    /// Issued by the file system's journal thread (ext4's `jbd2/...`).
    JournalThread,
    /// The write overlaps one of these sector ranges (the journal's extents).
    Range { ranges: Vec<SectorRange> },
    /// The request carries `REQ_META`.
    MetaFlag,
    /// Every page was written at least `min_writes` times before, counted in
    /// `page_sectors`-sector pages (update frequency, decayed by halving all
    /// counts every `halve_every` writes).
    Hot(HotTracker),
}

/// Per-page update counts for [`Rule::Hot`].
#[derive(Clone, Debug)]
pub struct HotTracker {
    counts: Vec<u8>,
    page_sectors: u64,
    min_writes: u8,
    halve_every: u64,
    writes: u64,
}

impl HotTracker {
    pub fn new(pages: u32, page_sectors: u32, min_writes: u8, halve_every: u64) -> Self {
        Self {
            counts: vec![0; pages as usize],
            page_sectors: u64::from(page_sectors.max(1)),
            min_writes,
            halve_every: halve_every.max(1),
            writes: 0,
        }
    }

    fn pages(&self, sectors: SectorRange) -> std::ops::Range<usize> {
        let clamp = |page: u64| usize::try_from(page).unwrap_or(usize::MAX).min(self.counts.len());
        clamp(sectors.start / self.page_sectors)..clamp(sectors.end.div_ceil(self.page_sectors))
    }

    fn is_hot(&self, sectors: SectorRange) -> bool {
        let pages = self.pages(sectors);
        !pages.is_empty() && self.counts[pages].iter().all(|&count| count >= self.min_writes)
    }

    fn observe(&mut self, sectors: SectorRange) {
        let pages = self.pages(sectors);
        for count in &mut self.counts[pages] {
            *count = count.saturating_add(1);
        }
        self.writes += 1;
        if self.writes.is_multiple_of(self.halve_every) {
            self.counts.iter_mut().for_each(|count| *count /= 2);
        }
    }
}

impl Rule {
    fn matches(&self, write: &WriteInfo) -> bool {
        match self {
            Rule::JournalThread => write.journal_thread,
            Rule::Range { ranges } => {
                ranges.iter().any(|range| range.start < write.sectors.end && write.sectors.start < range.end)
            }
            Rule::MetaFlag => write.flags.meta,
            Rule::Hot(tracker) => tracker.is_hot(write.sectors),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClassifyError {
    #[error("a classifier may name at most {CLASSES_MAX} classes (`data` included); `{0}` is one too many")]
    TooManyClasses(String),
}

/// Ordered rules, each naming a class.
#[derive(Clone, Debug)]
pub struct Classifier {
    classes: Vec<String>,
    rules: Vec<(Rule, ClassId)>,
}

impl Default for Classifier {
    fn default() -> Self {
        Self { classes: vec!["data".to_owned()], rules: Vec::new() }
    }
}

impl Classifier {
    /// Adds a rule after the existing ones; a new class name gets the next id.
    pub fn rule(mut self, class: &str, rule: Rule) -> Result<Self, ClassifyError> {
        let id = match self.classes.iter().position(|name| name == class) {
            Some(index) => index,
            None if self.classes.len() < CLASSES_MAX => {
                self.classes.push(class.to_owned());
                self.classes.len() - 1
            }
            None => return Err(ClassifyError::TooManyClasses(class.to_owned())),
        };
        self.rules.push((rule, ClassId(u8::try_from(id).unwrap_or(u8::MAX))));
        Ok(self)
    }

    /// A preset policy for a file system whose journal lies in `journal`.
    pub fn from_kind(
        kind: ClassifierKind,
        journal: &[SectorRange],
        hot: Option<HotTracker>,
    ) -> Result<Self, ClassifyError> {
        let journal_rules = |classifier: Self| {
            classifier.rule("journal", Rule::JournalThread)?.rule("journal", Rule::Range { ranges: journal.to_vec() })
        };
        match kind {
            ClassifierKind::None => Ok(Self::default()),
            ClassifierKind::Journal => journal_rules(Self::default()),
            ClassifierKind::JournalMetadata => journal_rules(Self::default())?.rule("metadata", Rule::MetaFlag),
            ClassifierKind::JournalHotCold => match hot {
                Some(tracker) => journal_rules(Self::default())?.rule("hot", Rule::Hot(tracker)),
                None => journal_rules(Self::default()),
            },
        }
    }

    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    pub fn class_named(&self, name: &str) -> Option<ClassId> {
        self.classes.iter().position(|class| class == name).and_then(|index| u8::try_from(index).ok()).map(ClassId)
    }

    /// The class of `write`; stateful rules then learn from it.
    pub fn classify(&mut self, write: &WriteInfo) -> ClassId {
        let class = self.rules.iter().find(|(rule, _)| rule.matches(write)).map_or(ClassId(0), |(_, class)| *class);
        for (rule, _) in &mut self.rules {
            if let Rule::Hot(tracker) = rule {
                tracker.observe(write.sectors);
            }
        }
        class
    }
}

/// The preset policies a configuration names (`host.classifier`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClassifierKind {
    /// No classification: every write keeps the stream its source gave.
    #[default]
    None,
    /// Journal (jbd2 process or journal extents) vs data: the paper's scheme.
    Journal,
    /// Journal, metadata (`REQ_META`), data.
    JournalMetadata,
    /// Journal, hot data (pages rewritten often), cold data.
    JournalHotCold,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(start: u64, process: &str, meta: bool) -> WriteInfo {
        let flags = WriteFlags { meta, ..WriteFlags::default() };
        WriteInfo { sectors: SectorRange::new(start, 8), journal_thread: process.starts_with("jbd2/"), flags }
    }

    #[test]
    fn journal_by_process_or_range_and_data_otherwise() {
        let journal = [SectorRange::new(1000, 100)];
        let mut classifier = Classifier::from_kind(ClassifierKind::Journal, &journal, None).expect("two classes");
        let journal_class = classifier.class_named("journal").expect("named");
        assert_eq!(classifier.classify(&write(0, "jbd2/loop0-8", false)), journal_class);
        assert_eq!(classifier.classify(&write(1096, "kworker/1:0H", false)), journal_class);
        assert_eq!(classifier.classify(&write(1100, "kworker/1:0H", false)), ClassId(0));
        assert_eq!(classifier.classify(&write(0, "fio", true)), ClassId(0));
    }

    #[test]
    fn user_classes_extend_the_policy() {
        let mut classifier = Classifier::from_kind(ClassifierKind::JournalMetadata, &[], None).expect("three classes");
        assert_eq!(classifier.classes(), ["data", "journal", "metadata"]);
        assert_eq!(classifier.classify(&write(0, "kworker/0:1", true)), ClassId(2));
        let too_many =
            (0..CLASSES_MAX).try_fold(Classifier::default(), |c, i| c.rule(&format!("c{i}"), Rule::MetaFlag));
        assert_eq!(too_many.err(), Some(ClassifyError::TooManyClasses(format!("c{}", CLASSES_MAX - 1))));
    }

    #[test]
    fn pages_become_hot_after_repeated_updates_and_cool_down() {
        let tracker = HotTracker::new(64, 8, 2, 6);
        let mut classifier = Classifier::from_kind(ClassifierKind::JournalHotCold, &[], Some(tracker)).expect("three");
        let hot = classifier.class_named("hot").expect("named");
        assert_eq!(classifier.classify(&write(0, "app", false)), ClassId(0));
        assert_eq!(classifier.classify(&write(0, "app", false)), ClassId(0));
        assert_eq!(classifier.classify(&write(0, "app", false)), hot);
        for _ in 0..3 {
            classifier.classify(&write(64, "app", false));
        }
        // Six writes halved every count: page 0 fell from 3 to 1.
        assert_eq!(classifier.classify(&write(0, "app", false)), ClassId(0));
    }
}
