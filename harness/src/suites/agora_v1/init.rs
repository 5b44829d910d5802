//! What `agentconform init` finds of an agora-v1 provider: whether it serves the
//! profile's direct resource (one REQUEST, as the direct case sends it).

use crate::init::{DiscoverFuture, Entry};
use crate::script::Ctx;

pub fn discover(ctx: &mut Ctx) -> DiscoverFuture<'_> {
    Box::pin(async move {
        let p = ctx.profile().agora_v1.clone();
        vec![
            Entry::missing("agora-v1", "direct_resource", format!("agora-v1.md defines no listing of a provider's resources: the default {:?} is used; set it to a resource the provider answers with a RESULT", p.direct_resource)),
            Entry::missing("agora-v1", "negotiated_resource", format!("agora-v1.md defines no listing of a provider's resources: the default {:?} is used; set it to a resource the provider answers with an OFFER", p.negotiated_resource)),
        ]
    })
}
