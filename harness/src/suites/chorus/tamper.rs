//! The reference faults the proxy applies in flight (`proxy --fault`,
//! `interop --fault`): none yet. A job goes to the agent's own `api_endpoint`,
//! which discovery names and the proxy does not stand before; the changes of the
//! registry's replies the catalogue has (a lower-case result status, TRANSFER_FAILED
//! with 200) meet no reply of the interop plays.

use crate::tamper::Tamper;

pub const TAMPERS: &[Tamper] = &[];
