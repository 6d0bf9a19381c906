//! The numbers of the OTF2 format that the model is built from (the
//! values of the OTF2 headers' enumerations, fixed by the format): with
//! them the reading does not depend on the library's bindings.

// paradigms
pub const PARADIGM_MPI: u32 = 4;
pub const PARADIGM_MEASUREMENT_SYSTEM: u32 = 6;
pub const PARADIGM_GASPI: u32 = 11;
pub const PARADIGM_UPC: u32 = 12;
pub const PARADIGM_SHMEM: u32 = 13;
#[cfg(test)]
pub const PARADIGM_KOKKOS: u32 = 24;

// region roles
pub const REGION_ROLE_BARRIER: u32 = 15;
pub const REGION_ROLE_IMPLICIT_BARRIER: u32 = 16;
pub const REGION_ROLE_TASK_WAIT: u32 = 22;
pub const REGION_ROLE_COLL_ONE2ALL: u32 = 23;
pub const REGION_ROLE_COLL_ALL2ONE: u32 = 24;
pub const REGION_ROLE_COLL_ALL2ALL: u32 = 25;
pub const REGION_ROLE_COLL_OTHER: u32 = 26;
pub const REGION_ROLE_POINT2POINT: u32 = 28;
pub const REGION_ROLE_RMA: u32 = 29;
pub const REGION_ROLE_DATA_TRANSFER: u32 = 30;
pub const REGION_ROLE_THREAD_WAIT: u32 = 33;
#[cfg(test)]
pub const REGION_ROLE_REALLOCATE: u32 = 37;

// location and group types
pub const LOCATION_TYPE_CPU_THREAD: u32 = 1;
pub const GROUP_TYPE_COMM_LOCATIONS: u32 = 4;
pub const GROUP_TYPE_COMM_SELF: u32 = 6;

// the values of a metric sample
pub const TYPE_INT64: u8 = 8;
pub const TYPE_DOUBLE: u8 = 10;
