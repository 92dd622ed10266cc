//! parsec-net C ABI: the FFI shell over `net-core`. Only `extern "C"` functions, the panic
//! boundary and the one global instance live here; all logic is in `net-core`.
//!
//! Every export checks its pointers and lengths, never unwinds, returns a stable result code
//! (`result_codes`) and leaves a readable message for `NET_GetLastError`.
#![allow(non_snake_case, non_camel_case_types)]

pub mod console;
pub mod ffi_guard;
pub mod game_calls;
pub mod game_types;
pub mod global;
pub mod jump_table;
pub mod lifecycle;
pub mod logging;
pub mod packet_calls;
pub mod protocol_calls;
pub mod result_codes;
pub mod server_list_calls;

pub use jump_table::NET_ABI_VERSION;
pub use parsec_backend_abi::NET_Node;
