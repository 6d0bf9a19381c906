//! Instant events, messages, counters and collective operations, each stored
//! column by column.

use rustc_hash::FxHashMap as HashMap;

use serde::Serialize;

use super::{LocId, Time};

/// A type of instant event (Paraver event type, Chrome instant name, PICL
/// record kind) with the names of its values where the format gives them.
#[derive(Debug, Clone, Serialize)]
pub struct EventType {
    pub external_id: i64,
    pub name: String,
    pub values: Vec<(i64, String)>,
}

/// The table of event types.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EventTypes {
    types: Vec<EventType>,
    #[serde(skip)]
    by_external: HashMap<i64, u32>,
    #[serde(skip)]
    by_name: HashMap<String, u32>,
}

impl EventTypes {
    /// Bytes the types, their names and values and the lookups take.
    pub fn heap_bytes(&self) -> usize {
        use super::heap::{map, vec};
        vec(&self.types)
            + self
                .types
                .iter()
                .map(|t| {
                    t.name.capacity()
                        + vec(&t.values)
                        + t.values.iter().map(|(_, s)| s.capacity()).sum::<usize>()
                })
                .sum::<usize>()
            + map(&self.by_external)
            + map(&self.by_name)
            + self.by_name.keys().map(String::capacity).sum::<usize>()
    }
    pub fn len(&self) -> usize {
        self.types.len()
    }
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }
    pub fn get(&self, id: u32) -> Option<&EventType> {
        self.types.get(id as usize)
    }
    pub fn iter(&self) -> impl Iterator<Item = &EventType> {
        self.types.iter()
    }
    pub fn by_external(&self, ext: i64) -> Option<u32> {
        self.by_external.get(&ext).copied()
    }
    pub fn by_name(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// Adds (or returns) the type with external id `ext`.
    pub fn add(&mut self, ext: i64, name: &str) -> u32 {
        if let Some(id) = self.by_external.get(&ext) {
            return *id;
        }
        let id = self.types.len() as u32;
        self.types.push(EventType {
            external_id: ext,
            name: name.to_string(),
            values: Vec::new(),
        });
        self.by_external.insert(ext, id);
        self.by_name.entry(name.to_string()).or_insert(id);
        id
    }

    /// Interns a type by name (external id = order of first appearance).
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(id) = self.by_name.get(name) {
            return *id;
        }
        let mut ext = self.types.len() as i64;
        while self.by_external.contains_key(&ext) {
            ext += 1;
        }
        self.add(ext, name)
    }

    /// Names a value of type `id`.
    pub fn name_value(&mut self, id: u32, value: i64, name: &str) {
        if let Some(t) = self.types.get_mut(id as usize) {
            t.values.push((value, name.to_string()));
        }
    }

    /// The name of `value` for type `id`, if the format named it.
    pub fn value_name(&self, id: u32, value: i64) -> Option<&str> {
        self.get(id)?
            .values
            .iter()
            .find(|(v, _)| *v == value)
            .map(|(_, n)| n.as_str())
    }
}

/// Instant events, sorted by (location, time); events that belong to no
/// location (global markers) come last.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Events {
    /// `offsets[l]..offsets[l + 1]` for location `l`; the bucket after the
    /// last location holds global events.
    pub(crate) offsets: Vec<u64>,
    pub time: Vec<Time>,
    pub kind: Vec<u32>,
    pub value: Vec<i64>,
}

impl Events {
    /// Bytes the columns take.
    pub fn heap_bytes(&self) -> usize {
        use super::heap::vec;
        vec(&self.offsets) + vec(&self.time) + vec(&self.kind) + vec(&self.value)
    }
    pub fn len(&self) -> usize {
        self.time.len()
    }
    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }
    /// Index range of the events of location `loc`.
    pub fn range_of(&self, loc: LocId) -> std::ops::Range<usize> {
        let l = loc as usize;
        if l + 1 >= self.offsets.len() {
            return 0..0;
        }
        self.offsets[l] as usize..self.offsets[l + 1] as usize
    }
    /// Index range of the global events.
    pub fn global_range(&self) -> std::ops::Range<usize> {
        match self.offsets.len() {
            0 | 1 => 0..0,
            n => self.offsets[n - 2] as usize..self.offsets[n - 1] as usize,
        }
    }
}

/// Point-to-point messages, sorted by send time.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Messages {
    pub sender: Vec<LocId>,
    pub receiver: Vec<LocId>,
    pub send_time: Vec<Time>,
    pub recv_time: Vec<Time>,
    pub bytes: Vec<u64>,
    pub tag: Vec<i64>,
}

impl Messages {
    /// Bytes the columns take.
    pub fn heap_bytes(&self) -> usize {
        use super::heap::vec;
        vec(&self.sender)
            + vec(&self.receiver)
            + vec(&self.send_time)
            + vec(&self.recv_time)
            + vec(&self.bytes)
            + vec(&self.tag)
    }
    pub fn len(&self) -> usize {
        self.sender.len()
    }
    pub fn is_empty(&self) -> bool {
        self.sender.is_empty()
    }
    pub fn total_bytes(&self) -> u64 {
        self.bytes.iter().fold(0u64, |a, &b| a.saturating_add(b))
    }
    /// Message `i` whole: (sender, receiver, send time, receive time,
    /// bytes, tag).
    pub fn record(&self, i: usize) -> (LocId, LocId, Time, Time, u64, i64) {
        (
            self.sender[i],
            self.receiver[i],
            self.send_time[i],
            self.recv_time[i],
            self.bytes[i],
            self.tag[i],
        )
    }
}

/// A counter (metric) definition.
#[derive(Debug, Clone, Serialize)]
pub struct CounterDef {
    pub name: String,
    pub unit: String,
}

/// Counter samples, sorted by (location, counter, time).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Counters {
    pub defs: Vec<CounterDef>,
    pub(crate) offsets: Vec<u64>,
    pub counter: Vec<u32>,
    pub time: Vec<Time>,
    pub value: Vec<f64>,
}

impl Counters {
    /// Bytes the definitions and the columns take.
    pub fn heap_bytes(&self) -> usize {
        use super::heap::vec;
        vec(&self.defs)
            + self
                .defs
                .iter()
                .map(|d| d.name.capacity() + d.unit.capacity())
                .sum::<usize>()
            + vec(&self.offsets)
            + vec(&self.counter)
            + vec(&self.time)
            + vec(&self.value)
    }
    pub fn len(&self) -> usize {
        self.time.len()
    }
    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }
    /// Index range of the samples of location `loc`.
    pub fn range_of(&self, loc: LocId) -> std::ops::Range<usize> {
        let l = loc as usize;
        if l + 1 >= self.offsets.len() {
            return 0..0;
        }
        self.offsets[l] as usize..self.offsets[l + 1] as usize
    }
}

/// Names of collective operations.
pub type CollectiveOps = Vec<String>;

/// Participations in collective operations, sorted by begin time.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Collectives {
    pub ops: CollectiveOps,
    pub loc: Vec<LocId>,
    pub begin: Vec<Time>,
    pub end: Vec<Time>,
    /// Communicator id as the format gives it.
    pub comm: Vec<i64>,
    /// Index into `ops`.
    pub op: Vec<u32>,
    pub sent: Vec<u64>,
    pub received: Vec<u64>,
    /// Root rank, or -1.
    pub root: Vec<i64>,
}

impl Collectives {
    /// Bytes the operations' names and the columns take.
    pub fn heap_bytes(&self) -> usize {
        use super::heap::{strings, vec};
        strings(&self.ops)
            + vec(&self.loc)
            + vec(&self.begin)
            + vec(&self.end)
            + vec(&self.comm)
            + vec(&self.op)
            + vec(&self.sent)
            + vec(&self.received)
            + vec(&self.root)
    }
    pub fn len(&self) -> usize {
        self.loc.len()
    }
    pub fn is_empty(&self) -> bool {
        self.loc.is_empty()
    }
    pub fn intern_op(&mut self, name: &str) -> u32 {
        if let Some(i) = self.ops.iter().position(|o| o == name) {
            return i as u32;
        }
        self.ops.push(name.to_string());
        (self.ops.len() - 1) as u32
    }
}

/// A communicator: an id and its members (ranks as the format numbers them).
#[derive(Debug, Clone, Serialize)]
pub struct Communicator {
    pub id: i64,
    pub name: String,
    pub members: Vec<i64>,
}
