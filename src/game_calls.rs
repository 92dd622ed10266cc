//! The game-code interface of the C API: player name and ship state, the event queue
//! (`NET_PollEvent`), player lookups, the remote-event functions (`NET_RmEv*`), and the
//! object-position callback for time-critical events.

use std::cell::RefCell;
use std::ffi::{c_char, c_void};

use net_core::rmev::{
    ChatText, CustomData, PlayerName, RemoteEvent, MAX_NAME_LEN, MAX_SLOTS, MAX_TEXT_LEN,
};
use net_core::{ErrorCode, NetError, NetResult};

use crate::ffi_guard::{
    guard, guard_code, read_c_text_nonempty, require_non_null, require_sane_len,
};
use crate::game_types::{NET_Event, NET_ShipState, NET_SEND_RELIABLE};
use crate::global::{with_subsystem, with_subsystem_timed};

/// Read `N` floats from a caller's array.
///
/// # Safety
/// `ptr` must be NULL or readable for `N` floats.
unsafe fn read_floats<const N: usize>(ptr: *const f32, what: &str) -> NetResult<[f32; N]> {
    require_non_null(ptr, what)?;
    let values = std::ptr::read_unaligned(ptr.cast::<[f32; N]>());
    if values.iter().any(|f| !f.is_finite()) {
        return Err(NetError::invalid(format!(
            "{what} has a non-finite number (NaN or infinity)"
        )));
    }
    Ok(values)
}

fn send(event: RemoteEvent) -> i32 {
    guard_code(|| with_subsystem(move |sub| sub.queue_remote_event(event).map(|()| 0)))
}

fn object_id(id: u32) -> NetResult<u32> {
    if id == 0 {
        Err(NetError::invalid("object id 0 is not valid"))
    } else {
        Ok(id)
    }
}

/// Set the local player's name (1-31 bytes, UTF-8). Sent to the others by NETs_UpdateName (or
/// the console's `name`).
///
/// # Safety
/// `name` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn NET_SetPlayerName(name: *const c_char) -> i32 {
    guard_code(|| {
        let name = read_c_text_nonempty(name, MAX_NAME_LEN, "player name")?;
        with_subsystem(|sub| sub.set_player_name(name).map(|()| 0))
    })
}

/// Set the local ship state, sent with every packet while joined (and only when it changed).
///
/// # Safety
/// `state` must be readable.
#[no_mangle]
pub unsafe extern "C" fn NET_SetLocalState(state: *const NET_ShipState) -> i32 {
    guard_code(|| {
        require_non_null(state, "state")?;
        let state: net_core::rmev::ShipState = state.read_unaligned().into();
        // Checked here too, so a NaN is INVALID_ARGUMENT before NET_Init as after it.
        if !state.is_finite() {
            return Err(NetError::invalid(
                "ship state has a non-finite number (NaN or infinity)",
            ));
        }
        with_subsystem(|sub| sub.set_local_state(state).map(|()| 0))
    })
}

/// The latest ship state of the player in slot `player_id` (this client's own for its slot).
/// Returns NET_OK, NET_ERR_INVALID_ARGUMENT for an id with no player, or NET_ERR_NOT_CONNECTED
/// before connecting.
///
/// # Safety
/// `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn NET_GetPlayerState(player_id: i32, out: *mut NET_ShipState) -> i32 {
    guard_code(|| {
        require_non_null(out, "out")?;
        let slot = u8::try_from(player_id)
            .ok()
            .filter(|s| usize::from(*s) < MAX_SLOTS)
            .ok_or_else(|| {
                NetError::invalid(format!("player id {player_id} is not 0-{}", MAX_SLOTS - 1))
            })?;
        let state = with_subsystem(|sub| sub.player_state(slot))?;
        out.write_unaligned(state.into());
        Ok(0)
    })
}

thread_local! {
    /// One NUL-terminated name buffer per slot, per thread, for NET_FetchPlayerName.
    static NAME_BUFFERS: RefCell<[[c_char; MAX_NAME_LEN + 1]; MAX_SLOTS]> =
        const { RefCell::new([[0; MAX_NAME_LEN + 1]; MAX_SLOTS]) };
}

/// The name of the player in slot `player_id`, or NULL if there is none. The string stays valid
/// until the next NET_FetchPlayerName for the same slot on the same thread.
#[no_mangle]
pub extern "C" fn NET_FetchPlayerName(player_id: i32) -> *const c_char {
    guard(
        |_| std::ptr::null(),
        || {
            let slot = u8::try_from(player_id)
                .ok()
                .filter(|s| usize::from(*s) < MAX_SLOTS)
                .ok_or_else(|| {
                    NetError::invalid(format!("player id {player_id} is not 0-{}", MAX_SLOTS - 1))
                })?;
            let name: Option<PlayerName> = with_subsystem(|sub| Ok(sub.player_name(slot)))?;
            let Some(name) = name else {
                return Ok(std::ptr::null());
            };
            Ok(NAME_BUFFERS.with(|buffers| {
                let mut buffers = buffers.borrow_mut();
                let buffer = &mut buffers[usize::from(slot)];
                let bytes = name.as_bytes();
                for (dst, src) in buffer.iter_mut().zip(bytes) {
                    *dst = *src as c_char;
                }
                buffer[bytes.len()] = 0;
                buffer.as_ptr()
            }))
        },
    )
}

/// The slot of the player that created `object_id` (from the creation events seen), or -1.
#[no_mangle]
pub extern "C" fn NET_FetchOwner(object_id: u32) -> i32 {
    guard(
        |_| -1,
        || with_subsystem(|sub| Ok(sub.owner_of(object_id).map_or(-1, i32::from))),
    )
}

/// Take the next event: 1 written to `*out`, 0 if none is waiting, or an error (< 0).
///
/// # Safety
/// `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn NET_PollEvent(out: *mut NET_Event) -> i32 {
    guard_code(|| {
        require_non_null(out, "out")?;
        match with_subsystem(|sub| Ok(sub.poll_event()))? {
            Some(event) => {
                out.write_unaligned(NET_Event::from_game_event(&event));
                Ok(1)
            }
            None => Ok(0),
        }
    })
}

/// The game's answer to "where is object `object_id` now?": write 3 floats to `pos_out` and
/// return 1, or return 0 if unknown. Called inside NETs_MaintainNet, right before a packet with
/// a time-critical event (object, laser, missile creation) is written; it must not call NET_
/// functions.
pub type NET_ObjectPositionCallback =
    Option<extern "C" fn(object_id: u32, pos_out: *mut f32, user: *mut c_void) -> i32>;

struct UserPointer(*mut c_void);
// SAFETY: the pointer is only handed back to the game's own callback.
unsafe impl Send for UserPointer {}

/// Register (or with NULL remove) the object-position callback.
#[no_mangle]
pub extern "C" fn NET_SetObjectPositionCallback(
    callback: NET_ObjectPositionCallback,
    user: *mut c_void,
) -> i32 {
    guard_code(|| {
        let hook: Option<net_core::game::PositionCallback> = callback.map(|cb| {
            let user = UserPointer(user);
            Box::new(move |object_id: u32| {
                let user = &user;
                let mut pos = [0f32; 3];
                (cb(object_id, pos.as_mut_ptr(), user.0) == 1).then_some(pos)
            }) as net_core::game::PositionCallback
        });
        with_subsystem(|sub| {
            sub.game_mut().set_position_callback(hook);
            Ok(0)
        })
    })
}

/// RE_CREATEOBJECT: an object of general type was created (position refreshed at send time).
///
/// # Safety
/// `pos` must point to 3 floats, `orient` to 4.
#[no_mangle]
pub unsafe extern "C" fn NET_RmEvCreateObject(
    object_id: u32,
    object_class: u16,
    pos: *const f32,
    orient: *const f32,
    flags: u32,
) -> i32 {
    guard_code(|| {
        let event = RemoteEvent::CreateObject {
            object_id: self::object_id(object_id)?,
            class: object_class,
            pos: read_floats::<3>(pos, "pos")?,
            orient: read_floats::<4>(orient, "orient")?,
            flags,
        };
        Ok(send(event))
    })
}

/// RE_CREATELASER: the local player fired a laser (position refreshed at send time).
///
/// # Safety
/// `pos` and `dir` must point to 3 floats each.
#[no_mangle]
pub unsafe extern "C" fn NET_RmEvCreateLaser(
    object_id: u32,
    object_class: u16,
    pos: *const f32,
    dir: *const f32,
) -> i32 {
    guard_code(|| {
        let event = RemoteEvent::CreateLaser {
            object_id: self::object_id(object_id)?,
            class: object_class,
            pos: read_floats::<3>(pos, "pos")?,
            dir: read_floats::<3>(dir, "dir")?,
        };
        Ok(send(event))
    })
}

/// RE_CREATEMISSILE: the local player fired a missile at `target_id` (0: none).
///
/// # Safety
/// `pos` and `dir` must point to 3 floats each.
#[no_mangle]
pub unsafe extern "C" fn NET_RmEvCreateMissile(
    object_id: u32,
    object_class: u16,
    pos: *const f32,
    dir: *const f32,
    target_id: u32,
) -> i32 {
    guard_code(|| {
        let event = RemoteEvent::CreateMissile {
            object_id: self::object_id(object_id)?,
            class: object_class,
            pos: read_floats::<3>(pos, "pos")?,
            dir: read_floats::<3>(dir, "dir")?,
            target_id,
        };
        Ok(send(event))
    })
}

/// RE_CREATEEXTRA: an extra (a collectable) was created.
///
/// # Safety
/// `pos` must point to 3 floats.
#[no_mangle]
pub unsafe extern "C" fn NET_RmEvCreateExtra(
    object_id: u32,
    extra_index: u16,
    pos: *const f32,
) -> i32 {
    guard_code(|| {
        let event = RemoteEvent::CreateExtra {
            object_id: self::object_id(object_id)?,
            extra_index,
            pos: read_floats::<3>(pos, "pos")?,
        };
        Ok(send(event))
    })
}

/// RE_KILLOBJECT: remove object `object_id` from list `list_id` (0-15) at the others.
#[no_mangle]
pub extern "C" fn NET_RmEvKillObject(object_id: u32, list_id: u8) -> i32 {
    guard_code(|| {
        if list_id > net_core::rmev::MAX_LIST_ID {
            return Err(NetError::invalid(format!(
                "list id {list_id} is not 0-{}",
                net_core::rmev::MAX_LIST_ID
            )));
        }
        Ok(send(RemoteEvent::KillObject {
            object_id: self::object_id(object_id)?,
            list_id,
        }))
    })
}

/// RE_SENDTEXT: a chat line (1-255 bytes).
///
/// # Safety
/// `text` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn NET_RmEvSendText(text: *const c_char) -> i32 {
    guard_code(|| {
        let text = read_c_text_nonempty(text, MAX_TEXT_LEN, "text")?;
        let text = ChatText::new(text.as_bytes())
            .map_err(|e| NetError::new(ErrorCode::TooLarge, format!("text {e}")))?;
        Ok(send(RemoteEvent::SendText(text)))
    })
}

/// RE_PLAYERNAME: tell the others a new name (1-31 bytes); also becomes the local name. On a
/// slot or gameserver it is asked of the server first, as NETs_UpdateName does.
///
/// # Safety
/// `name` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn NET_RmEvPlayerName(name: *const c_char) -> i32 {
    guard_code(|| {
        let name = read_c_text_nonempty(name, MAX_NAME_LEN, "player name")?;
        with_subsystem_timed(|sub, now| {
            // Only a name the others were told (or a server was asked for) becomes the local
            // name; a server's refusal puts the old one back later.
            let previous = sub.game().name().to_string();
            sub.set_player_name(name)?;
            sub.update_name(now).map(|_| 0).inspect_err(|_| {
                let _ = sub.set_player_name(&previous);
            })
        })
    })
}

/// RE_PARTICLEOBJECT: a particle object (e.g. an energy field) was created at `origin`.
///
/// # Safety
/// `origin` must point to 3 floats.
#[no_mangle]
pub unsafe extern "C" fn NET_RmEvParticleObject(particle_type: u16, origin: *const f32) -> i32 {
    guard_code(|| {
        let origin = read_floats::<3>(origin, "origin")?;
        Ok(send(RemoteEvent::ParticleObject {
            particle_type,
            origin,
        }))
    })
}

/// RE_CUSTOM: game-defined event `custom_type` with `len` bytes (at most 256) of `data`;
/// `flags` NET_SEND_RELIABLE (delivered once, in order) or 0 (may be lost).
///
/// # Safety
/// `data` must be readable for `len` bytes (may be NULL when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn NET_RmEvCustom(
    custom_type: u16,
    data: *const c_void,
    len: usize,
    flags: u32,
) -> i32 {
    guard_code(|| {
        require_sane_len(len, "len")?;
        if flags & !NET_SEND_RELIABLE != 0 {
            return Err(NetError::invalid(format!(
                "flags {flags:#x}: only NET_SEND_RELIABLE (1) is defined"
            )));
        }
        let bytes: &[u8] = if len == 0 {
            &[]
        } else {
            require_non_null(data, "data")?;
            std::slice::from_raw_parts(data.cast::<u8>(), len)
        };
        let data = CustomData::new(bytes).ok_or_else(|| {
            NetError::new(
                ErrorCode::TooLarge,
                format!("custom data of {len} bytes is larger than 256"),
            )
        })?;
        Ok(send(RemoteEvent::Custom {
            custom_type,
            data,
            reliable: flags & NET_SEND_RELIABLE != 0,
        }))
    })
}
