/** Lease timings of the chaos suite's managers: short, so every fault plays out in seconds. */
export const CHAOS_LEASE = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 250 };

/** The lease duration, ms. */
export const CHAOS_LEASE_MS = CHAOS_LEASE.leaseDurationMs;
