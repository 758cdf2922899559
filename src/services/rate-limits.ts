// Request quotas per workspace and per caller (the token's sub in its workspace), in fixed windows
// of RATE_LIMIT_WINDOW_SECONDS: every API request counts against its workspace's and its caller's
// `requests` quotas; run starts and validations count against lower quotas of their own as well.
// A request beyond a quota is refused (429) and spends nothing.
//
// The counters are the store's (port/quotas.ts): shared by every replica on PostgreSQL, in the
// process on SQLite. A process takes units from them in small batches and spends them itself, so
// most requests are admitted without a statement: a batch is at most 1 % of the quota (50 units at
// most) and shrinks near the quota's end. The quota is never exceeded; across replicas a caller may
// be refused up to one unspent batch per other replica early.
import { createHash } from 'node:crypto';
import type { Principal } from '../domain/principal';
import { ApiError } from '../errors';
import type { QuotaRepository } from '../store/port';

/** The quotas of one scope (a workspace, or a caller), per window; 0: that quota is off. */
export interface ScopeQuotas {
  requests: number;
  runs: number;
  validations: number;
}

export interface RateLimitConfig {
  windowSeconds: number;
  workspace: ScopeQuotas;
  caller: ScopeQuotas;
}

export const DEFAULT_RATE_LIMITS: RateLimitConfig = Object.freeze({
  windowSeconds: 60,
  workspace: Object.freeze({ requests: 60_000, runs: 12_000, validations: 12_000 }),
  caller: Object.freeze({ requests: 30_000, runs: 6_000, validations: 6_000 }),
});

type QuotaClass = keyof ScopeQuotas;

/** The operations that count against the lower quotas as well as against `requests`. */
const CLASS_OF: Record<string, QuotaClass> = {
  testAgent: 'runs',
  testWorkflow: 'runs',
  startEval: 'runs',
  validateAgent: 'validations',
  validateWorkflow: 'validations',
};

export interface QuotaPolicy {
  /** Its name in the RateLimit fields: `workspace`, `caller`, `workspace-runs`, … */
  name: string;
  scope: 'workspace' | 'caller';
  quota: number;
  windowSeconds: number;
  /** What it counts, in a refusal's words: `requests`, `run starts`, `validations`. */
  unit: string;
}

export interface PolicyState {
  readonly policy: QuotaPolicy;
  /** Units left in the window, as this process knows them. */
  readonly remaining: number;
}

/** `states`: each policy the request counts against; `resetSeconds`: until their window ends. */
export type Admission =
  | { admitted: true; states: readonly PolicyState[]; resetSeconds: number }
  | { admitted: false; states: readonly PolicyState[]; resetSeconds: number; refusedBy: QuotaPolicy; retryAfterSeconds: number };

export interface RateLimiter {
  /** The policies a request of `operationId` counts against (none when every quota is off). */
  policiesOf(operationId: string): readonly QuotaPolicy[];
  /** Counts the request against its policies, or refuses it, spending nothing. */
  admit(principal: Principal, operationId: string, nowMs?: number): Admission | Promise<Admission>;
}

/** The units this process has taken from one policy's window, and spent: the policy's state as an admission reports it. */
class Lease implements PolicyState {
  taken = 0;
  spent = 0;
  /** The window's units taken by every process, at this process's last take. */
  sharedUsed = 0;
  /** The store granted nothing: the window is used up. */
  exhausted = false;
  taking: Promise<void> | null = null;

  constructor(
    readonly policy: QuotaPolicy,
    readonly storeKey: string,
    readonly window: number,
  ) {}

  get remaining(): number {
    return Math.max(0, this.policy.quota - this.sharedUsed + (this.taken - this.spent));
  }
}

const MAX_BATCH = 50;

const UNITS: Record<QuotaClass, string> = { requests: 'requests', runs: 'run starts', validations: 'validations' };

function policiesFor(config: RateLimitConfig, quotaClass: QuotaClass): QuotaPolicy[] {
  const classes: QuotaClass[] = quotaClass === 'requests' ? ['requests'] : ['requests', quotaClass];
  const policies: QuotaPolicy[] = [];
  for (const c of classes) {
    for (const scope of ['workspace', 'caller'] as const) {
      const quota = config[scope][c];
      if (quota > 0) policies.push({ name: c === 'requests' ? scope : `${scope}-${c}`, scope, quota, windowSeconds: config.windowSeconds, unit: UNITS[c] });
    }
  }
  return policies;
}

/** Takes the lease's next batch of units from the store (one take at a time per lease; the callers share it). */
function takeBatch(quotas: QuotaRepository, lease: Lease): Promise<void> {
  const left = lease.policy.quota - lease.sharedUsed;
  const batch = Math.max(1, Math.min(MAX_BATCH, Math.ceil(lease.policy.quota / 100), Math.floor(left / 8)));
  lease.taking ??= quotas
    .take(lease.storeKey, lease.window, batch, lease.policy.quota)
    .then(({ granted, used }) => {
      lease.taken += granted;
      lease.sharedUsed = used;
      if (granted === 0) lease.exhausted = true;
    })
    .finally(() => {
      lease.taking = null;
    });
  return lease.taking;
}

/** The limiter of `config`'s quotas, counting in `quotas`; each refusal is recorded with `refused` (a metric). */
export function createRateLimiter(config: RateLimitConfig, quotas: QuotaRepository, refused: (policy: string) => void = () => undefined): RateLimiter {
  const windowMs = config.windowSeconds * 1000;
  const byClass: Record<QuotaClass, QuotaPolicy[]> = {
    requests: policiesFor(config, 'requests'),
    runs: policiesFor(config, 'runs'),
    validations: policiesFor(config, 'validations'),
  };
  const policiesOf = (operationId: string) => byClass[CLASS_OF[operationId] ?? 'requests'];
  // The current window's leases, by policy and caller; both maps start afresh with each window.
  // The second finds a principal's leases without building their keys: a verified token's principal
  // is one object for as long as the token is remembered (auth/bearer.ts).
  let leases = new Map<string, Lease>();
  let heldBy = new WeakMap<Principal, Map<readonly QuotaPolicy[], Lease[]>>();
  let leasesWindow = -1;

  const leaseOf = (policy: QuotaPolicy, principal: Principal, window: number): Lease => {
    const key =
      policy.scope === 'workspace' ? `${policy.name}\u0000${principal.workspaceId}` : `${policy.name}\u0000${principal.workspaceId}\u0000${principal.userId}`;
    let lease = leases.get(key);
    if (!lease) {
      // Hashed: a sub is as long as its token allows; the counter's key is 43 characters.
      leases.set(key, (lease = new Lease(policy, createHash('sha256').update(key).digest('base64url'), window)));
    }
    return lease;
  };

  const leasesOf = (policies: readonly QuotaPolicy[], principal: Principal, window: number): Lease[] => {
    let byPolicies = heldBy.get(principal);
    if (!byPolicies) heldBy.set(principal, (byPolicies = new Map()));
    let held = byPolicies.get(policies);
    if (!held) byPolicies.set(policies, (held = policies.map((policy) => leaseOf(policy, principal, window))));
    return held;
  };

  const admit = (principal: Principal, operationId: string, nowMs = Date.now()): Admission | Promise<Admission> => {
    const policies = policiesOf(operationId);
    const window = Math.floor(nowMs / windowMs);
    if (window !== leasesWindow) {
      leases = new Map();
      heldBy = new WeakMap();
      leasesWindow = window;
    }
    const resetSeconds = Math.max(1, Math.ceil(((window + 1) * windowMs - nowMs) / 1000));
    const held = leasesOf(policies, principal, window);
    const spend = (): Admission | null => {
      for (const lease of held) if (lease.taken === lease.spent) return null;
      for (const lease of held) lease.spent++;
      return { admitted: true, states: held, resetSeconds };
    };
    const admitted = spend();
    if (admitted) return admitted;
    return (async () => {
      for (;;) {
        const short = held.filter((lease) => lease.taken === lease.spent);
        const used = short.find((lease) => lease.exhausted);
        if (used) {
          refused(used.policy.name);
          return { admitted: false, states: held, resetSeconds, refusedBy: used.policy, retryAfterSeconds: resetSeconds };
        }
        await Promise.all(short.map((lease) => takeBatch(quotas, lease)));
        const now = spend();
        if (now) return now;
      }
    })();
  };

  return { policiesOf, admit };
}

/** The refusal of a request beyond `admission`'s quota: 429, with Retry-After. */
export function quotaRefusal(admission: Extract<Admission, { admitted: false }>): ApiError {
  const { refusedBy: policy, retryAfterSeconds } = admission;
  const whose = policy.scope === 'workspace' ? "the workspace's" : "this caller's";
  return new ApiError(
    429,
    `rate limit '${policy.name}': ${whose} quota of ${policy.quota} ${policy.unit} per ${policy.windowSeconds} s is used up; retry after ${retryAfterSeconds} s`,
    {},
    { 'Retry-After': String(retryAfterSeconds) },
  );
}
