//! Budgeted context: the working tier plus the best search hits, rendered as
//! prompt text that is never over the token budget.
//!
//! The tiered assembly (critical, relevant, background, index) arrives with
//! issue 4; this is the two-tier form the walking skeleton needs.

use std::collections::HashSet;

use crate::error::ProjectionError;
use crate::item::{ItemState, ProvenanceRef};
use crate::memory::AgentMemory;
use crate::retrieval::SearchRequest;
use crate::tokens;

/// Share of the budget the most recent turns may take before search hits
/// are considered; what hits leave unused flows back to older turns.
const WORKING_SHARE: f64 = 0.5;
/// Hits considered for the relevant tier.
const RELEVANT_CANDIDATES: usize = 20;
/// A hit is cut to fit what remains only if at least this much remains;
/// a dozen tokens of a stack trace helps nobody.
const MIN_TRUNCATED_TOKENS: usize = 24;
const WORKING_HEADING: &str = "## Recent turns\n";
const RELEVANT_HEADING: &str = "## Relevant memories\n";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextRequest {
    pub query: String,
    pub budget_tokens: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContextTier {
    /// Recent turns.
    Working,
    /// Hits for the query.
    Relevant,
}

impl ContextTier {
    pub fn as_str(self) -> &'static str {
        match self {
            ContextTier::Working => "working",
            ContextTier::Relevant => "relevant",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ContextItem {
    pub tier: ContextTier,
    pub item_id: String,
    pub seq: u64,
    pub kind: &'static str,
    pub text: String,
    /// Tokens of this item's line in the rendered text.
    pub tokens: usize,
    pub provenance: Vec<ProvenanceRef>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ContextResponse {
    pub items: Vec<ContextItem>,
    /// The rendered prompt text.
    pub text: String,
    /// Tokens of `text`, counted whole; never more than `budget_tokens`.
    pub tokens: usize,
    pub budget_tokens: usize,
    /// The memory's checkpoint when the context was assembled.
    pub as_of_seq: u64,
}

impl AgentMemory {
    /// Assembles context for `request.query` within `request.budget_tokens`.
    pub fn context(&mut self, request: &ContextRequest) -> Result<ContextResponse, ProjectionError> {
        let budget = request.budget_tokens;
        let header = format!("# Memory of {} (swarm {}), as of seq {}\n", self.agent, self.swarm, self.checkpoint);
        let header_tokens = tokens::count(&header);
        // Section headings are reserved up front so that the final count
        // does not have to drop a chosen item to make room for them.
        let reserved = header_tokens + tokens::count(WORKING_HEADING) + tokens::count(RELEVANT_HEADING);
        let mut chosen: Vec<ContextItem> = Vec::new();
        if budget > reserved {
            self.choose_items(request, budget - reserved, &mut chosen)?;
        }
        // Lines are counted one by one while choosing; the whole text is what
        // a model sees, so it is counted again and trimmed until it fits.
        loop {
            let text = render(&header, &chosen);
            let total = if chosen.is_empty() && header_tokens > budget { 0 } else { tokens::count(&text) };
            if total <= budget {
                let text = if total == 0 { String::new() } else { text };
                return Ok(ContextResponse {
                    items: chosen,
                    text,
                    tokens: total,
                    budget_tokens: budget,
                    as_of_seq: self.checkpoint,
                });
            }
            if chosen.pop().is_none() {
                return Ok(ContextResponse {
                    items: Vec::new(),
                    text: String::new(),
                    tokens: 0,
                    budget_tokens: budget,
                    as_of_seq: self.checkpoint,
                });
            }
        }
    }

    fn choose_items(
        &mut self,
        request: &ContextRequest,
        available: usize,
        chosen: &mut Vec<ContextItem>,
    ) -> Result<(), ProjectionError> {
        let mut used = 0usize;
        let working_allowance = (available as f64 * WORKING_SHARE) as usize;
        let recent: Vec<(u64, String)> =
            self.working.entries().rev().map(|entry| (entry.seq, entry.text.clone())).collect();
        let mut recent = recent.into_iter().peekable();
        // Newest turns first, up to their share.
        while let Some((seq, text)) = recent.peek() {
            let line = line_for(*seq, self.kind_of(*seq), text);
            let line_tokens = tokens::count(&line);
            if used + line_tokens > working_allowance {
                break;
            }
            used += line_tokens;
            chosen.push(self.context_item(ContextTier::Working, *seq, text.clone(), line_tokens));
            recent.next();
        }
        let in_context: HashSet<u64> = chosen.iter().map(|item| item.seq).collect();
        let search = SearchRequest::new(request.query.clone(), RELEVANT_CANDIDATES);
        for hit in self.search(&search)? {
            if in_context.contains(&hit.seq) || self.items[&hit.seq].state == ItemState::Archived {
                continue;
            }
            let remaining = available.saturating_sub(used);
            let line = line_for(hit.seq, hit.kind, &hit.text);
            let line_tokens = tokens::count(&line);
            if line_tokens <= remaining {
                used += line_tokens;
                chosen.push(self.context_item(ContextTier::Relevant, hit.seq, hit.text, line_tokens));
            } else if remaining >= MIN_TRUNCATED_TOKENS {
                let prefix_tokens = tokens::count(&line_for(hit.seq, hit.kind, ""));
                let (cut, _) = tokens::truncate(&hit.text, remaining.saturating_sub(prefix_tokens + 1));
                let cut_tokens = tokens::count(&line_for(hit.seq, hit.kind, &cut));
                if cut_tokens <= remaining {
                    used += cut_tokens;
                    chosen.push(self.context_item(ContextTier::Relevant, hit.seq, cut, cut_tokens));
                }
            }
        }
        // Budget the hits left unused goes to older turns.
        for (seq, text) in recent {
            let line_tokens = tokens::count(&line_for(seq, self.kind_of(seq), &text));
            if used + line_tokens > available {
                break;
            }
            used += line_tokens;
            chosen.push(self.context_item(ContextTier::Working, seq, text, line_tokens));
        }
        Ok(())
    }

    fn kind_of(&self, seq: u64) -> &'static str {
        self.items.get(&seq).map_or("unknown", |item| item.kind)
    }

    fn context_item(&self, tier: ContextTier, seq: u64, text: String, tokens: usize) -> ContextItem {
        let item = &self.items[&seq];
        ContextItem {
            tier,
            item_id: item.item_id.clone(),
            seq,
            kind: item.kind,
            text,
            tokens,
            provenance: item.provenance.clone(),
        }
    }
}

fn line_for(seq: u64, kind: &str, text: &str) -> String {
    format!("- [seq {seq} {kind}] {text}\n")
}

/// Working turns in chronological order, then relevant hits by rank.
fn render(header: &str, chosen: &[ContextItem]) -> String {
    let mut text = header.to_string();
    let mut working: Vec<&ContextItem> = chosen.iter().filter(|item| item.tier == ContextTier::Working).collect();
    working.sort_by_key(|item| item.seq);
    if !working.is_empty() {
        text.push_str(WORKING_HEADING);
        for item in working {
            text.push_str(&line_for(item.seq, item.kind, &item.text));
        }
    }
    let relevant: Vec<&ContextItem> = chosen.iter().filter(|item| item.tier == ContextTier::Relevant).collect();
    if !relevant.is_empty() {
        text.push_str(RELEVANT_HEADING);
        for item in relevant {
            text.push_str(&line_for(item.seq, item.kind, &item.text));
        }
    }
    text
}
