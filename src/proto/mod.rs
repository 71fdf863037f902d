//! The Gearman wire protocol as pure code: bytes in, frames and typed requests out, typed
//! responses back to bytes. No I/O, no clock, no jobs live here.
//!
//! - `frame`: a read buffer into binary packets and admin lines; `packet`: the packet-type
//!   table and the magics.
//! - `request`: typed requests from a packet's body; `response`: typed responses to bytes.
//! - `admin`: an admin line into an `AdminCommand`.
//! - `names`: which bytes a function name may hold, and names written safely into replies.

pub mod admin;
pub mod frame;
pub mod names;
pub mod packet;
pub mod request;
pub mod response;

pub use admin::AdminCommand;
pub use frame::{DecodeError, Frame, Incoming, decode};
pub use packet::{Magic, PacketType};
pub use request::{JobBody, Request, RequestError};
pub use response::{Response, encode};
