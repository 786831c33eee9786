//! NATS subject and stream names for a swarm. Names were validated as
//! subject-safe tokens when the events were decoded.

/// `mneme.<swarm>.<agent>.events.<kind>`
pub fn event_subject(swarm: &str, agent: &str, kind: &str) -> String {
    format!("mneme.{swarm}.{agent}.events.{kind}")
}

/// Every events subject of one agent.
pub fn agent_events_filter(swarm: &str, agent: &str) -> String {
    format!("mneme.{swarm}.{agent}.events.>")
}

/// Every events subject of the swarm.
pub fn swarm_events_filter(swarm: &str) -> String {
    format!("mneme.{swarm}.*.events.>")
}

/// `mneme.<swarm>.fence.lease.<role>`: in the events stream, the fence a
/// new holder of the lease on `role` sets (see `crate::lease`). Not an
/// events subject (its fourth token is not `events`), and five tokens
/// long, so no handoff subject (four) can match it: reads of events pass
/// over it.
pub fn fence_subject(swarm: &str, role: &str) -> String {
    format!("mneme.{swarm}.fence.lease.{role}")
}

/// Every fence subject of the swarm.
pub fn swarm_fences_filter(swarm: &str) -> String {
    format!("mneme.{swarm}.fence.lease.*")
}

/// `mneme.<swarm>.deadletter`
pub fn deadletter_subject(swarm: &str) -> String {
    format!("mneme.{swarm}.deadletter")
}

/// `mneme.<swarm>.erasures`: what each purge erased.
pub fn erasures_subject(swarm: &str) -> String {
    format!("mneme.{swarm}.erasures")
}

/// `mneme.<swarm>.replaced`: copies of records rewritten in place.
pub fn replaced_subject(swarm: &str) -> String {
    format!("mneme.{swarm}.replaced")
}

/// `mneme.<swarm>.<agent>.handoff`
pub fn handoff_subject(swarm: &str, agent: &str) -> String {
    format!("mneme.{swarm}.{agent}.handoff")
}

/// Every handoff subject of the swarm: what the handoffs stream captures.
pub fn swarm_handoffs_filter(swarm: &str) -> String {
    format!("mneme.{swarm}.*.handoff")
}

/// `mneme.<swarm>.<agent>.query.<verb>`
pub fn query_subject(swarm: &str, agent: &str, verb: &str) -> String {
    format!("mneme.{swarm}.{agent}.query.{verb}")
}

/// The JetStream stream holding a swarm's events.
pub fn events_stream(swarm: &str) -> String {
    format!("MNEME_{swarm}")
}

/// The JetStream stream holding a swarm's dead letters.
pub fn deadletter_stream(swarm: &str) -> String {
    format!("MNEME_{swarm}_DEADLETTER")
}

/// The JetStream stream holding what each purge of a swarm erased.
pub fn erasures_stream(swarm: &str) -> String {
    format!("MNEME_{swarm}_ERASURES")
}

/// The JetStream stream holding the copies of records rewritten in place.
pub fn replaced_stream(swarm: &str) -> String {
    format!("MNEME_{swarm}_REPLACED")
}

/// The JetStream stream holding the handoff packages delivered in a swarm,
/// for recipients that read them with a durable consumer.
pub fn handoffs_stream(swarm: &str) -> String {
    format!("MNEME_{swarm}_HANDOFFS")
}

/// The JetStream key-value bucket holding durable consumer positions.
pub fn positions_bucket(swarm: &str) -> String {
    format!("MNEME_{swarm}_positions")
}

/// The key-value bucket of a swarm's leases (see `crate::lease`).
pub fn leases_bucket(swarm: &str) -> String {
    format!("MNEME_{swarm}_leases")
}

/// The agent token of an events subject, if it is one of `swarm`'s.
pub fn agent_of_subject<'a>(swarm: &str, subject: &'a str) -> Option<&'a str> {
    let mut tokens = subject.split('.');
    if tokens.next()? != "mneme" || tokens.next()? != swarm {
        return None;
    }
    let agent = tokens.next()?;
    (tokens.next()? == "events").then_some(agent)
}

/// The agent and verb of a query subject, if it is one of `swarm`'s.
pub fn query_of_subject<'a>(swarm: &str, subject: &'a str) -> Option<(&'a str, &'a str)> {
    let mut tokens = subject.split('.');
    if tokens.next()? != "mneme" || tokens.next()? != swarm {
        return None;
    }
    let agent = tokens.next()?;
    if tokens.next()? != "query" {
        return None;
    }
    let verb = tokens.next()?;
    tokens.next().is_none().then_some((agent, verb))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_is_read_back_from_an_events_subject() {
        let subject = event_subject("demo", "coder", "message_recorded");
        assert_eq!(agent_of_subject("demo", &subject), Some("coder"));
        assert_eq!(agent_of_subject("other", &subject), None);
        assert_eq!(agent_of_subject("demo", "mneme.demo.deadletter"), None);
        assert_eq!(agent_of_subject("demo", &fence_subject("demo", "writer")), None);
    }

    #[test]
    fn agent_and_verb_are_read_back_from_a_query_subject() {
        let subject = query_subject("demo", "coder", "search");
        assert_eq!(query_of_subject("demo", &subject), Some(("coder", "search")));
        assert_eq!(query_of_subject("other", &subject), None);
        assert_eq!(query_of_subject("demo", "mneme.demo.coder.events.message_recorded"), None);
        assert_eq!(query_of_subject("demo", "mneme.demo.coder.query.search.extra"), None);
    }
}
