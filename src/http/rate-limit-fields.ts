// The RateLimit-Policy and RateLimit fields of draft-ietf-httpapi-ratelimit-headers (-10 and
// later): Structured Field lists of quota policies, each a String naming the policy with its
// parameters — `q` (quota), `w` (window, seconds) in the policy; `r` (remaining) and `t` (seconds
// until the window resets) in the current state. For example:
//   RateLimit-Policy: "workspace";q=60000;w=60, "caller";q=30000;w=60
//   RateLimit: "workspace";r=59873;t=42, "caller";r=29990;t=42
import type { Response } from 'express';
import type { Principal, ServiceContext } from '../services/context';
import { quotaRefusal, type Admission, type PolicyState, type QuotaPolicy } from '../services/rate-limits';

// Policy names are the service's own (`workspace`, `caller-runs`, …): no escaping is needed.
const policyFields = new WeakMap<readonly QuotaPolicy[], string>();

/** The RateLimit-Policy value of `policies` (computed once per list: the lists are fixed at start). */
export function policyField(policies: readonly QuotaPolicy[]): string {
  let field = policyFields.get(policies);
  if (field === undefined) policyFields.set(policies, (field = policies.map((p) => `"${p.name}";q=${p.quota};w=${p.windowSeconds}`).join(', ')));
  return field;
}

export function rateLimitField(states: readonly PolicyState[], resetSeconds: number): string {
  let field = '';
  for (const s of states) field += `${field ? ', ' : ''}"${s.policy.name}";r=${s.remaining};t=${resetSeconds}`;
  return field;
}

/** Sets both fields on `res` (none when every quota is off). */
export function setRateLimitFields(res: Response, policies: readonly QuotaPolicy[], admission: Admission): void {
  if (!policies.length) return;
  res.setHeader('RateLimit-Policy', policyField(policies));
  res.setHeader('RateLimit', rateLimitField(admission.states, admission.resetSeconds));
}

/**
 * Counts the request against its quotas (services/rate-limits.ts) before its body is read, and
 * answers with the RateLimit fields whatever follows; beyond a quota, 429 (thrown, or the promise
 * rejects). Synchronous (undefined) unless the units must be taken from the store first.
 */
export function admitWithinQuota(ctx: ServiceContext, res: Response, principal: Principal, operationId: string): Promise<void> | undefined {
  const policies = ctx.rateLimits.policiesOf(operationId);
  if (!policies.length) return undefined;
  const answered = (admission: Admission) => {
    setRateLimitFields(res, policies, admission);
    if (!admission.admitted) throw quotaRefusal(admission);
  };
  const admission = ctx.rateLimits.admit(principal, operationId);
  if (admission instanceof Promise) return admission.then(answered);
  answered(admission);
  return undefined;
}
