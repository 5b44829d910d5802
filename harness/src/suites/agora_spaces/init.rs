//! What `agentconform init` finds of an agora-spaces hub: whether it wants a
//! connection token.

use crate::init::{DiscoverFuture, Entry};
use crate::script::Ctx;
use crate::suites::agora_spaces::expect::{Attempt, Peer};

pub fn discover(ctx: &mut Ctx) -> DiscoverFuture<'_> {
    Box::pin(async move {
        let mut out = Vec::new();
        let token = ctx.profile().target.token.clone();
        let id = format!("init-{}", &reference_impl::wire::new_id()[..8]);
        match Peer::attempt(ctx, Some(&id), token.as_deref()).await {
            Ok(Attempt::Open(mut p)) => {
                p.close().await;
                match token {
                    Some(t) => out.push(Entry::found("target", "token", t, "the hub took a connection with the token the profile given to init names")),
                    None => out.push(Entry::missing("target", "token", "the hub took a connection without a token: none is needed (the UNAUTHORIZED case is skipped without one)")),
                }
            }
            Ok(Attempt::Refused(s)) => out.push(Entry::missing("target", "token", format!("the hub refused a connection with HTTP {s}: set it to the connection token the hub wants"))),
            _ => out.push(Entry::missing("target", "token", "a WebSocket connection to the hub could not be opened")),
        }
        out.push(Entry::missing("agora-spaces", "full_space", "a space of capacity 1 cannot be found by probing: set it to one the hub serves, or leave it unset (the SPACE_FULL case is skipped)"));
        out
    })
}
