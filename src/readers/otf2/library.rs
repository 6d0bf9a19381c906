//! The OTF2 library's readers (feature `otf2`): the archives the native
//! decoder leaves to it ([`super::native`]), and every archive when
//! `TAPESTRY_OTF2_LIBRARY` is set. Its callbacks fill the same
//! definitions ([`Defs`]) and event sinks ([`EventSink`]) the native
//! decoder fills.

use std::ffi::{CStr, CString, c_char, c_void};
use std::path::{Path, PathBuf};

use super::{
    Archive, Defs, EventSink, GroupError, MetricMembers, Source, UNDEF32, archive_locations, ffi,
    metric_value,
};
use crate::diagnostics::Position;
use crate::error::{Error, Result};

/// What the definition callbacks fill.
struct Ctx {
    defs: Defs,
}

fn ctx<'a>(user: *mut c_void) -> &'a mut Ctx {
    // SAFETY: every callback is registered with a pointer to the `Ctx` that
    // lives on the stack of `read` for the whole read, and the library calls
    // them serially from that same thread.
    unsafe { &mut *(user as *mut Ctx) }
}

// ---- definition callbacks -------------------------------------------------

unsafe extern "C" fn def_string(
    user: *mut c_void,
    id: u32,
    s: *const c_char,
) -> ffi::OTF2_CallbackCode {
    let text = if s.is_null() {
        String::new()
    } else {
        // SAFETY: the library passes a NUL-terminated string valid during the call.
        unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
    };
    ctx(user).defs.strings.insert(id, text);
    OK
}

unsafe extern "C" fn def_clock(
    user: *mut c_void,
    res: u64,
    offset: u64,
    length: u64,
    _rt: u64,
) -> ffi::OTF2_CallbackCode {
    ctx(user).defs.clock = Some((res, offset, length));
    OK
}

unsafe extern "C" fn def_system_node(
    user: *mut c_void,
    id: u32,
    name: u32,
    class: u32,
    parent: u32,
) -> ffi::OTF2_CallbackCode {
    ctx(user)
        .defs
        .system_nodes
        .insert(id, (name, class, parent));
    OK
}

unsafe extern "C" fn def_location_group(
    user: *mut c_void,
    id: u32,
    name: u32,
    _ty: ffi::OTF2_LocationGroupType,
    parent: u32,
    _creator: u32,
) -> ffi::OTF2_CallbackCode {
    ctx(user).defs.location_groups.insert(id, (name, parent));
    OK
}

unsafe extern "C" fn def_location(
    user: *mut c_void,
    id: u64,
    name: u32,
    ty: ffi::OTF2_LocationType,
    _events: u64,
    group: u32,
) -> ffi::OTF2_CallbackCode {
    ctx(user).defs.locations.insert(id, (name, ty, group));
    OK
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn def_region(
    user: *mut c_void,
    id: u32,
    name: u32,
    _canonical: u32,
    _description: u32,
    role: ffi::OTF2_RegionRole,
    paradigm: ffi::OTF2_Paradigm,
    _flags: ffi::OTF2_RegionFlag,
    _file: u32,
    _begin: u32,
    _end: u32,
) -> ffi::OTF2_CallbackCode {
    ctx(user).defs.regions.insert(id, (name, role, paradigm));
    OK
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn def_group(
    user: *mut c_void,
    id: u32,
    _name: u32,
    ty: ffi::OTF2_GroupType,
    paradigm: ffi::OTF2_Paradigm,
    _flags: ffi::OTF2_GroupFlag,
    n: u32,
    members: *const u64,
) -> ffi::OTF2_CallbackCode {
    let m = if members.is_null() || n == 0 {
        Vec::new()
    } else {
        // SAFETY: the library passes `n` members valid during the call.
        unsafe { std::slice::from_raw_parts(members, n as usize) }.to_vec()
    };
    ctx(user).defs.groups.insert(id, (ty, paradigm, m));
    OK
}

unsafe extern "C" fn def_comm(
    user: *mut c_void,
    id: u32,
    name: u32,
    group: u32,
    _parent: u32,
    _flags: ffi::OTF2_CommFlag,
) -> ffi::OTF2_CallbackCode {
    ctx(user).defs.comms.insert(id, (name, group));
    OK
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn def_metric_member(
    user: *mut c_void,
    id: u32,
    name: u32,
    _description: u32,
    _ty: ffi::OTF2_MetricType,
    _mode: ffi::OTF2_MetricMode,
    _value: ffi::OTF2_Type,
    _base: ffi::OTF2_Base,
    _exponent: i64,
    unit: u32,
) -> ffi::OTF2_CallbackCode {
    ctx(user).defs.metric_members.insert(id, (name, unit));
    OK
}

unsafe extern "C" fn def_metric_class(
    user: *mut c_void,
    id: u32,
    n: u8,
    members: *const u32,
    _occurrence: ffi::OTF2_MetricOccurrence,
    _recorder: ffi::OTF2_RecorderKind,
) -> ffi::OTF2_CallbackCode {
    let m = if members.is_null() {
        Vec::new()
    } else {
        // SAFETY: the library passes `n` members valid during the call.
        unsafe { std::slice::from_raw_parts(members, n as usize) }.to_vec()
    };
    ctx(user).defs.metric_classes.insert(id, m);
    OK
}

unsafe extern "C" fn def_metric_instance(
    user: *mut c_void,
    id: u32,
    class: u32,
    _recorder: u64,
    _scope_kind: ffi::OTF2_MetricScope,
    _scope: u64,
) -> ffi::OTF2_CallbackCode {
    ctx(user).defs.metric_instances.insert(id, class);
    OK
}

/// What the event callbacks of one reader fill, with the global
/// definitions read before (shared by the readers of every thread).
struct EvCtx<'d, S> {
    ev: S,
    metric: MetricMembers<'d>,
}

fn evctx<'a, 'd, S>(user: *mut c_void) -> &'a mut EvCtx<'d, S> {
    // SAFETY: every event callback is registered with a pointer to the
    // `EvCtx` of the thread that reads those locations, which outlives its
    // reader; one reader's callbacks run serially on that thread.
    unsafe { &mut *(user as *mut EvCtx<'d, S>) }
}

const OK: ffi::OTF2_CallbackCode = ffi::OTF2_CALLBACK_SUCCESS;

fn code(go_on: bool) -> ffi::OTF2_CallbackCode {
    if go_on {
        OK
    } else {
        ffi::OTF2_CALLBACK_INTERRUPT
    }
}

// A location's own event reader calls back with the event's position in
// its file after the time.

unsafe extern "C" fn on_enter<S: EventSink>(
    loc: u64,
    time: u64,
    _pos: u64,
    user: *mut c_void,
    _a: *mut ffi::OTF2_AttributeList,
    region: u32,
) -> ffi::OTF2_CallbackCode {
    code(evctx::<S>(user).ev.enter(loc, time, region))
}

unsafe extern "C" fn on_leave<S: EventSink>(
    loc: u64,
    time: u64,
    _pos: u64,
    user: *mut c_void,
    _a: *mut ffi::OTF2_AttributeList,
    region: u32,
) -> ffi::OTF2_CallbackCode {
    code(evctx::<S>(user).ev.leave(loc, time, region))
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_send<S: EventSink>(
    loc: u64,
    time: u64,
    _pos: u64,
    user: *mut c_void,
    _a: *mut ffi::OTF2_AttributeList,
    receiver: u32,
    comm: u32,
    tag: u32,
    len: u64,
) -> ffi::OTF2_CallbackCode {
    code(
        evctx::<S>(user)
            .ev
            .send(loc, time, receiver, comm, tag, len),
    )
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_isend<S: EventSink>(
    loc: u64,
    time: u64,
    _pos: u64,
    user: *mut c_void,
    _a: *mut ffi::OTF2_AttributeList,
    receiver: u32,
    comm: u32,
    tag: u32,
    len: u64,
    _request: u64,
) -> ffi::OTF2_CallbackCode {
    code(
        evctx::<S>(user)
            .ev
            .send(loc, time, receiver, comm, tag, len),
    )
}

unsafe extern "C" fn on_request<S: EventSink>(
    loc: u64,
    time: u64,
    _pos: u64,
    user: *mut c_void,
    _a: *mut ffi::OTF2_AttributeList,
    _req: u64,
) -> ffi::OTF2_CallbackCode {
    code(evctx::<S>(user).ev.timed(loc, time))
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_recv<S: EventSink>(
    loc: u64,
    time: u64,
    _pos: u64,
    user: *mut c_void,
    _a: *mut ffi::OTF2_AttributeList,
    sender: u32,
    comm: u32,
    tag: u32,
    len: u64,
) -> ffi::OTF2_CallbackCode {
    code(evctx::<S>(user).ev.recv(loc, time, sender, comm, tag, len))
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_irecv<S: EventSink>(
    loc: u64,
    time: u64,
    _pos: u64,
    user: *mut c_void,
    _a: *mut ffi::OTF2_AttributeList,
    sender: u32,
    comm: u32,
    tag: u32,
    len: u64,
    _request: u64,
) -> ffi::OTF2_CallbackCode {
    code(evctx::<S>(user).ev.recv(loc, time, sender, comm, tag, len))
}

unsafe extern "C" fn on_coll_begin<S: EventSink>(
    loc: u64,
    time: u64,
    _pos: u64,
    user: *mut c_void,
    _a: *mut ffi::OTF2_AttributeList,
) -> ffi::OTF2_CallbackCode {
    code(evctx::<S>(user).ev.coll_begin(loc, time))
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_coll_end<S: EventSink>(
    loc: u64,
    time: u64,
    _pos: u64,
    user: *mut c_void,
    _a: *mut ffi::OTF2_AttributeList,
    op: ffi::OTF2_CollectiveOp,
    comm: u32,
    root: u32,
    sent: u64,
    received: u64,
) -> ffi::OTF2_CallbackCode {
    code(
        evctx::<S>(user)
            .ev
            .coll_end(loc, time, op, comm, root, sent, received),
    )
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_metric<S: EventSink>(
    loc: u64,
    time: u64,
    _pos: u64,
    user: *mut c_void,
    _a: *mut ffi::OTF2_AttributeList,
    metric: u32,
    n: u8,
    types: *const ffi::OTF2_Type,
    values: *const ffi::OTF2_MetricValue,
) -> ffi::OTF2_CallbackCode {
    let c = evctx::<S>(user);
    if types.is_null() || values.is_null() {
        return code(c.ev.timed(loc, time));
    }
    // SAFETY: the library passes `n` types and values valid during the call.
    let (types, values) = unsafe {
        (
            std::slice::from_raw_parts(types, n as usize),
            std::slice::from_raw_parts(values, n as usize),
        )
    };
    let members = c.metric.of(metric);
    if types.is_empty() {
        return code(c.ev.timed(loc, time));
    }
    for (i, (&ty, v)) in types.iter().zip(values).enumerate() {
        // SAFETY: every member of the union is 64 bits; the type says how
        // to take them.
        let x = metric_value(ty, unsafe { v.unsigned_int });
        let member = members.get(i).copied().unwrap_or(UNDEF32);
        if !c.ev.metric(loc, time, member, x) {
            return code(false);
        }
    }
    OK
}

unsafe extern "C" fn on_program_begin<S: EventSink>(
    loc: u64,
    time: u64,
    _pos: u64,
    user: *mut c_void,
    _a: *mut ffi::OTF2_AttributeList,
    _name: u32,
    _n: u32,
    _args: *const u32,
) -> ffi::OTF2_CallbackCode {
    code(evctx::<S>(user).ev.program(loc, time, 0, 0))
}

unsafe extern "C" fn on_program_end<S: EventSink>(
    loc: u64,
    time: u64,
    _pos: u64,
    user: *mut c_void,
    _a: *mut ffi::OTF2_AttributeList,
    status: i64,
) -> ffi::OTF2_CallbackCode {
    code(evctx::<S>(user).ev.program(loc, time, 1, status))
}

unsafe extern "C" fn on_unknown<S: EventSink>(
    loc: u64,
    time: u64,
    _pos: u64,
    user: *mut c_void,
    _a: *mut ffi::OTF2_AttributeList,
) -> ffi::OTF2_CallbackCode {
    code(evctx::<S>(user).ev.unknown(loc, time))
}

/// Reads the events of `locations` into `ev` with a reader of its own (one
/// per thread: the library keeps no state shared between readers), each
/// location through its own event reader, in file order. No global merge
/// by time: what is built from the events needs only each location's
/// order (message matching sorts by time within a sender–receiver pair).
/// A sink that interrupts the read fails its location with the library's
/// "interrupted by callback" (the sink knows why).
pub(super) fn read_group<S: EventSink>(
    archive: &CString,
    defs: &Defs,
    locations: &[u64],
    size: impl Fn(u64) -> u64,
    ev: S,
) -> Result<S, GroupError> {
    let setup = |what: &str, code| GroupError::Setup(what.to_string(), describe(code));
    let mut c = EvCtx {
        ev,
        metric: MetricMembers::new(defs),
    };
    let user = &mut c as *mut EvCtx<S> as *mut c_void;
    // SAFETY: the library's documented sequence for local readers; every
    // pointer passed is valid for the call, `user` points to `c`, which
    // outlives the reader (closed on drop of `reader`).
    unsafe {
        let reader = Reader(ffi::OTF2_Reader_Open(archive.as_ptr()));
        if reader.0.is_null() {
            return Err(setup(
                "opening the archive",
                ffi::OTF2_ERROR_INVALID_ARGUMENT,
            ));
        }
        let r = reader.0;
        let ok = |code| code == ffi::OTF2_SUCCESS;
        if !ok(ffi::OTF2_Reader_SetSerialCollectiveCallbacks(r)) {
            return Err(setup(
                "setting serial collectives",
                ffi::OTF2_ERROR_INVALID_ARGUMENT,
            ));
        }
        for &l in locations {
            let code = ffi::OTF2_Reader_SelectLocation(r, l);
            if !ok(code) {
                return Err(setup("selecting a location", code));
            }
        }
        // the local definitions hold the mappings of local to global ids
        let defs_open = ok(ffi::OTF2_Reader_OpenDefFiles(r));
        let code = ffi::OTF2_Reader_OpenEvtFiles(r);
        if !ok(code) {
            return Err(setup("opening the event files", code));
        }
        // every location's local definitions first (each def reader has a
        // chunk-sized buffer, 4 MiB in Score-P's archives, filled at
        // creation), then each location's events through a reader of its
        // own, closed before the next is opened: one chunk buffer (1 MiB)
        // per thread at a time instead of one per location of the group
        if defs_open {
            for &l in locations {
                let dr = ffi::OTF2_Reader_GetDefReader(r, l);
                if !dr.is_null() {
                    let mut n = 0u64;
                    let code = ffi::OTF2_Reader_ReadAllLocalDefinitions(r, dr, &mut n);
                    ffi::OTF2_Reader_CloseDefReader(r, dr);
                    if !ok(code) {
                        return Err(GroupError::Location(l, 0, describe(code)));
                    }
                }
            }
            ffi::OTF2_Reader_CloseDefFiles(r);
        }
        let cb = ffi::OTF2_EvtReaderCallbacks_New();
        if cb.is_null() {
            return Err(setup(
                "allocating callbacks",
                ffi::OTF2_ERROR_MEM_ALLOC_FAILED,
            ));
        }
        ffi::OTF2_EvtReaderCallbacks_SetEnterCallback(cb, Some(on_enter::<S>));
        ffi::OTF2_EvtReaderCallbacks_SetLeaveCallback(cb, Some(on_leave::<S>));
        ffi::OTF2_EvtReaderCallbacks_SetMpiSendCallback(cb, Some(on_send::<S>));
        ffi::OTF2_EvtReaderCallbacks_SetMpiIsendCallback(cb, Some(on_isend::<S>));
        ffi::OTF2_EvtReaderCallbacks_SetMpiIsendCompleteCallback(cb, Some(on_request::<S>));
        ffi::OTF2_EvtReaderCallbacks_SetMpiIrecvRequestCallback(cb, Some(on_request::<S>));
        ffi::OTF2_EvtReaderCallbacks_SetMpiRecvCallback(cb, Some(on_recv::<S>));
        ffi::OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(cb, Some(on_irecv::<S>));
        ffi::OTF2_EvtReaderCallbacks_SetMpiCollectiveBeginCallback(cb, Some(on_coll_begin::<S>));
        ffi::OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback(cb, Some(on_coll_end::<S>));
        ffi::OTF2_EvtReaderCallbacks_SetMetricCallback(cb, Some(on_metric::<S>));
        ffi::OTF2_EvtReaderCallbacks_SetProgramBeginCallback(cb, Some(on_program_begin::<S>));
        ffi::OTF2_EvtReaderCallbacks_SetProgramEndCallback(cb, Some(on_program_end::<S>));
        ffi::OTF2_EvtReaderCallbacks_SetUnknownCallback(cb, Some(on_unknown::<S>));
        let mut failed = None;
        for &l in locations {
            let er = ffi::OTF2_Reader_GetEvtReader(r, l);
            if er.is_null() {
                failed = Some(GroupError::Location(
                    l,
                    0,
                    describe(ffi::OTF2_ERROR_INVALID_DATA),
                ));
                break;
            }
            let code = ffi::OTF2_Reader_RegisterEvtCallbacks(r, er, cb, user);
            if !ok(code) {
                ffi::OTF2_Reader_CloseEvtReader(r, er);
                failed = Some(GroupError::Location(l, 0, describe(code)));
                break;
            }
            c.ev.start_location(l, size(l));
            let mut n = 0u64;
            let code = ffi::OTF2_Reader_ReadAllLocalEvents(r, er, &mut n);
            ffi::OTF2_Reader_CloseEvtReader(r, er);
            if !ok(code) {
                failed = Some(GroupError::Location(l, n, describe(code)));
                break;
            }
        }
        ffi::OTF2_EvtReaderCallbacks_Delete(cb);
        ffi::OTF2_Reader_CloseEvtFiles(r);
        if let Some(e) = failed {
            return Err(e);
        }
    }
    Ok(c.ev)
}

/// Error handler: keeps the library quiet (errors are reported by the
/// return codes) and remembers the last failing function.
unsafe extern "C" fn on_error(
    _user: *mut c_void,
    _file: *const c_char,
    _line: u64,
    function: *const c_char,
    code: ffi::OTF2_ErrorCode,
    _fmt: *const c_char,
    _va: *mut ffi::__va_list_tag,
) -> ffi::OTF2_ErrorCode {
    if !function.is_null() {
        // SAFETY: a NUL-terminated string valid during the call.
        let f = unsafe { CStr::from_ptr(function) }
            .to_string_lossy()
            .into_owned();
        LAST_FUNCTION.with(|l| *l.borrow_mut() = f);
    }
    code
}

thread_local! {
    static LAST_FUNCTION: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

pub(super) fn describe(code: ffi::OTF2_ErrorCode) -> String {
    // SAFETY: the library returns static NUL-terminated strings (or null).
    let (name, desc) = unsafe {
        (
            ffi::OTF2_Error_GetName(code),
            ffi::OTF2_Error_GetDescription(code),
        )
    };
    let s = |p: *const c_char| {
        if p.is_null() {
            String::new()
        } else {
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    let func = LAST_FUNCTION.with(|l| l.borrow().clone());
    let mut m = format!("{} ({})", s(desc), s(name));
    if !func.is_empty() {
        m.push_str(&format!(" in {func}"));
    }
    m
}

/// The open library reader, closed on drop.
struct Reader(*mut ffi::OTF2_Reader);

impl Drop for Reader {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the pointer came from OTF2_Reader_Open and is closed once.
            unsafe { ffi::OTF2_Reader_Close(self.0) };
        }
    }
}

/// Reads the archive's global definitions with the OTF2 library.
pub(super) fn open(path: &Path, real: PathBuf) -> Result<Archive> {
    let fail = |what: &str, code: ffi::OTF2_ErrorCode| {
        Error::parse(
            path,
            Position::none(),
            format!("OTF2 library: {what} failed: {}", describe(code)),
        )
    };
    let c_path = CString::new(real.to_string_lossy().as_bytes())
        .map_err(|_| Error::Invalid(format!("{}: path contains a NUL byte", path.display())))?;
    let mut ctx = Ctx {
        defs: Defs::default(),
    };
    let user = &mut ctx as *mut Ctx as *mut c_void;

    // SAFETY: plain calls into the OTF2 C API following its documented
    // reading sequence; every pointer passed is valid for the call, and
    // `user` points to `ctx`, which outlives the reader.
    unsafe {
        ffi::OTF2_Error_RegisterCallback(Some(on_error), std::ptr::null_mut());
        let reader = Reader(ffi::OTF2_Reader_Open(c_path.as_ptr()));
        if reader.0.is_null() {
            return Err(Error::parse(
                path,
                Position::none(),
                format!(
                    "OTF2 library: cannot open the archive: {}",
                    describe(ffi::OTF2_ERROR_INVALID_ARGUMENT)
                ),
            ));
        }
        let r = reader.0;
        let check = |what: &str, code: ffi::OTF2_ErrorCode| {
            if code == ffi::OTF2_SUCCESS {
                Ok(())
            } else {
                Err(fail(what, code))
            }
        };
        check(
            "setting serial collectives",
            ffi::OTF2_Reader_SetSerialCollectiveCallbacks(r),
        )?;

        let gdr = ffi::OTF2_Reader_GetGlobalDefReader(r);
        if gdr.is_null() {
            return Err(fail(
                "opening the global definitions",
                ffi::OTF2_ERROR_INVALID_DATA,
            ));
        }
        let cbs = ffi::OTF2_GlobalDefReaderCallbacks_New();
        ffi::OTF2_GlobalDefReaderCallbacks_SetStringCallback(cbs, Some(def_string));
        ffi::OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(cbs, Some(def_clock));
        ffi::OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodeCallback(cbs, Some(def_system_node));
        ffi::OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(cbs, Some(def_location_group));
        ffi::OTF2_GlobalDefReaderCallbacks_SetLocationCallback(cbs, Some(def_location));
        ffi::OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cbs, Some(def_region));
        ffi::OTF2_GlobalDefReaderCallbacks_SetGroupCallback(cbs, Some(def_group));
        ffi::OTF2_GlobalDefReaderCallbacks_SetCommCallback(cbs, Some(def_comm));
        ffi::OTF2_GlobalDefReaderCallbacks_SetMetricMemberCallback(cbs, Some(def_metric_member));
        ffi::OTF2_GlobalDefReaderCallbacks_SetMetricClassCallback(cbs, Some(def_metric_class));
        ffi::OTF2_GlobalDefReaderCallbacks_SetMetricInstanceCallback(
            cbs,
            Some(def_metric_instance),
        );
        let reg = ffi::OTF2_Reader_RegisterGlobalDefCallbacks(r, gdr, cbs, user);
        ffi::OTF2_GlobalDefReaderCallbacks_Delete(cbs);
        check("registering definition callbacks", reg)?;
        let mut n_defs = 0u64;
        check(
            "reading the global definitions",
            ffi::OTF2_Reader_ReadAllGlobalDefinitions(r, gdr, &mut n_defs),
        )?;
        ffi::OTF2_Reader_CloseGlobalDefReader(r, gdr);
    }
    let evt_dir = real.with_extension("");
    let locations = archive_locations(path, &ctx.defs, &evt_dir)?;
    Ok(Archive {
        source: Source::Library(c_path),
        defs: ctx.defs,
        locations,
        evt_dir,
    })
}
