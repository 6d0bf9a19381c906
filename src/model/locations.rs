//! Locations (timelines) and their hierarchy.

use compact_str::CompactString;
use serde::Serialize;

use super::LocId;

/// The level of a group in the hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupKind {
    Machine,
    Node,
    Process,
}

/// A node of the hierarchy above the locations.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// In place up to 24 bytes (most names: "rank 12", "node 3"),
    /// with no allocation of its own.
    pub name: CompactString,
    pub kind: GroupKind,
    /// Index of the parent group, if any.
    pub parent: Option<u32>,
}

/// What a location's timeline represents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LocationKind {
    /// A thread of a process (an MPI rank's main thread, an OpenMP thread).
    Thread,
    /// An accelerator stream or another timeline that is not a CPU thread.
    Stream,
    /// A lane of asynchronous slices (Chrome async events).
    Async,
}

/// One timeline.
#[derive(Debug, Clone, Serialize)]
pub struct Location {
    /// In place up to 24 bytes, as [`Group::name`].
    pub name: CompactString,
    pub kind: LocationKind,
    /// The group (usually a process) this location belongs to.
    pub group: Option<u32>,
    /// The identifier the source format gave this location.
    pub external_id: i64,
}

/// All locations and groups of a trace.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Locations {
    pub groups: Vec<Group>,
    pub locations: Vec<Location>,
}

impl Locations {
    pub fn len(&self) -> usize {
        self.locations.len()
    }

    pub fn is_empty(&self) -> bool {
        self.locations.is_empty()
    }

    /// Bytes the locations and groups hold on the heap, names included
    /// (those that do not fit in place).
    pub fn heap_bytes(&self) -> usize {
        use super::heap::vec;
        vec(&self.groups)
            + self
                .groups
                .iter()
                .map(|g| name_bytes(&g.name))
                .sum::<usize>()
            + vec(&self.locations)
            + self
                .locations
                .iter()
                .map(|l| name_bytes(&l.name))
                .sum::<usize>()
    }

    pub fn get(&self, id: LocId) -> Option<&Location> {
        self.locations.get(id as usize)
    }

    /// Adds a group and returns its index.
    pub fn add_group(
        &mut self,
        name: impl Into<CompactString>,
        kind: GroupKind,
        parent: Option<u32>,
    ) -> u32 {
        self.groups.push(Group {
            name: name.into(),
            kind,
            parent,
        });
        (self.groups.len() - 1) as u32
    }

    /// Adds a location and returns its id.
    pub fn add(
        &mut self,
        name: impl Into<CompactString>,
        kind: LocationKind,
        group: Option<u32>,
        external_id: i64,
    ) -> LocId {
        self.locations.push(Location {
            name: name.into(),
            kind,
            group,
            external_id,
        });
        (self.locations.len() - 1) as LocId
    }

    /// The chain of group names from the root down to the location, joined by
    /// `/`, ending with the location's own name.
    pub fn path(&self, id: LocId) -> String {
        let Some(loc) = self.get(id) else {
            return String::new();
        };
        let mut parts = vec![loc.name.clone()];
        let mut g = loc.group;
        let mut guard = 0;
        while let Some(gi) = g {
            let Some(group) = self.groups.get(gi as usize) else {
                break;
            };
            parts.push(group.name.clone());
            g = group.parent;
            guard += 1;
            if guard > 64 {
                break;
            }
        }
        parts.reverse();
        parts.join("/")
    }

    /// Number of groups of each kind.
    pub fn group_counts(&self) -> [(GroupKind, usize); 3] {
        let count = |k| self.groups.iter().filter(|g| g.kind == k).count();
        [
            (GroupKind::Machine, count(GroupKind::Machine)),
            (GroupKind::Node, count(GroupKind::Node)),
            (GroupKind::Process, count(GroupKind::Process)),
        ]
    }
}

/// What a name holds on the heap: nothing where it fits in place.
fn name_bytes(name: &CompactString) -> usize {
    if name.is_heap_allocated() {
        name.capacity()
    } else {
        0
    }
}
