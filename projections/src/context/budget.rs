//! How a context's token budget is split between its tiers, and how the
//! share a tier cannot use flows to the others.

use super::{Activity, ContextTier, TIERS, ThinkingPolicy};

/// Core memory's share of a context's budget.
pub const CORE_SHARE: f64 = 0.10;

/// Shares of the budget, in tier order (core, critical, relevant,
/// background, index). They sum to one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TierShares(pub [f64; TIERS]);

impl TierShares {
    /// Core memory 10 %; the rest 25 / 37.5 / 25 / 12.5 %, widened toward
    /// what the activity needs: debugging wants errors, fixes and active
    /// decisions (critical); planning wants the shape of past work
    /// (background). What core memory does not use flows to the others.
    pub fn for_activity(activity: &Activity) -> TierShares {
        let rest = match activity {
            Activity::Debugging => [0.40, 0.35, 0.15, 0.10],
            Activity::Reviewing => [0.30, 0.375, 0.225, 0.10],
            Activity::Planning => [0.15, 0.30, 0.40, 0.15],
            Activity::Coding | Activity::Other(_) | Activity::Unspecified => [0.25, 0.375, 0.25, 0.125],
        };
        let [critical, relevant, background, index] = rest.map(|share| share * (1.0 - CORE_SHARE));
        TierShares([CORE_SHARE, critical, relevant, background, index])
    }

    pub fn of(&self, tier: ContextTier) -> f64 {
        self.0[tier as usize]
    }
}

impl ThinkingPolicy {
    /// The share of the relevant tier's allocation that recent turns may
    /// take before retrieval hits are placed.
    pub fn working_fraction(self) -> f64 {
        match self {
            ThinkingPolicy::Conservative => 0.3,
            ThinkingPolicy::Balanced => 0.5,
            ThinkingPolicy::Expansive => 0.7,
        }
    }
}

/// Splits `available` tokens between the tiers by `shares`, then gives what
/// a tier cannot use (its demand is below its share) to the tiers that want
/// more, in proportion to their shares, until every tier is satisfied or
/// the budget is spent. Never hands out more than `available` in total.
pub fn allocate(available: usize, shares: &TierShares, demands: [usize; TIERS]) -> [usize; TIERS] {
    let mut allocation: [usize; TIERS] =
        std::array::from_fn(|tier| (available as f64 * shares.0[tier]).floor() as usize);
    // Rounding leaves a few tokens over; they start as surplus.
    let mut surplus = available - allocation.iter().sum::<usize>();
    loop {
        for tier in 0..TIERS {
            if allocation[tier] > demands[tier] {
                surplus += allocation[tier] - demands[tier];
                allocation[tier] = demands[tier];
            }
        }
        let hungry: Vec<usize> = (0..TIERS).filter(|&tier| allocation[tier] < demands[tier]).collect();
        if surplus == 0 || hungry.is_empty() {
            break;
        }
        let weight: f64 = hungry.iter().map(|&tier| shares.0[tier]).sum();
        let mut handed = 0;
        for &tier in &hungry {
            let portion = if weight > 0.0 {
                (surplus as f64 * shares.0[tier] / weight).floor() as usize
            } else {
                surplus / hungry.len()
            };
            allocation[tier] += portion;
            handed += portion;
        }
        // What the floors left goes to the most important hungry tier.
        allocation[hungry[0]] += surplus - handed;
        surplus = 0;
    }
    debug_assert!(allocation.iter().sum::<usize>() <= available);
    allocation
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_shares_when_every_tier_wants_everything() {
        let shares = TierShares::for_activity(&Activity::Unspecified);
        let allocation = allocate(1000, &shares, [usize::MAX; TIERS]);
        // 1,000 × 0.9 × (25, 37.5, 25, 12.5 %), floored; the token the
        // floors leave goes to the first tier.
        assert_eq!(allocation, [101, 225, 337, 225, 112]);
    }

    #[test]
    fn debugging_widens_the_critical_tier() {
        let coding = allocate(1000, &TierShares::for_activity(&Activity::Coding), [usize::MAX; TIERS]);
        let debugging = allocate(1000, &TierShares::for_activity(&Activity::Debugging), [usize::MAX; TIERS]);
        assert!(debugging[ContextTier::Critical as usize] > coding[ContextTier::Critical as usize]);
        assert_eq!(debugging.iter().sum::<usize>(), 1000);
    }

    #[test]
    fn an_unused_share_flows_to_the_tiers_that_want_more() {
        let shares = TierShares::for_activity(&Activity::Unspecified);
        // No core memory, no critical items, a small index: their shares go
        // to relevant and background, in proportion 37.5 : 25.
        let allocation = allocate(1000, &shares, [0, 0, usize::MAX, usize::MAX, 25]);
        assert_eq!((allocation[0], allocation[1]), (0, 0));
        assert_eq!(allocation[4], 25);
        assert_eq!(allocation.iter().sum::<usize>(), 1000);
        assert!(allocation[2] > 375 && allocation[3] > 250);
        assert!(allocation[2] - 375 > allocation[3] - 250);
    }

    #[test]
    fn never_hands_out_more_than_the_budget() {
        for available in [0, 1, 7, 99, 1000, 12_345] {
            for demands in [[0, 0, 0, 0, 0], [2, 5, 0, 3, 1], [usize::MAX; TIERS], [40, 10_000, 1, 1, 10_000]] {
                let allocation = allocate(available, &TierShares::for_activity(&Activity::Planning), demands);
                assert!(allocation.iter().sum::<usize>() <= available);
                for tier in 0..TIERS {
                    assert!(allocation[tier] <= demands[tier]);
                }
            }
        }
    }
}
