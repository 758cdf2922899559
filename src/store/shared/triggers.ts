// What both adapters decide alike about an agent's trigger rows, which follow its document inside
// its write: the triggers it keeps, the webhook triggers that no longer sign, and the secrets minted
// by this write. Rows it no longer names go, and their secrets are retired (`dropped`: a delivery to
// them is 410); a secret minted for an existing trigger retires the old one (`rotated`).
import type { Agent } from '../../domain/types';

export interface TriggerPlan {
  /** The triggers the document names (id and kind): any other row of the agent goes. */
  keep: { id: string; kind: string }[];
  /** Its app_event triggers: their rows name the app and connection they listen to. */
  events: { id: string; app: string; connection: string }[];
  /** Webhook triggers that do not sign: their stored signing key is cleared. */
  unsigned: string[];
}

export function triggerPlan(doc: Agent): TriggerPlan {
  return {
    keep: doc.triggers.map((t) => ({ id: t.id, kind: t.kind })),
    events: doc.triggers.flatMap((t) => (t.kind === 'app_event' ? [{ id: t.id, app: t.app, connection: t.connection }] : [])),
    unsigned: doc.triggers.filter((t) => t.kind === 'webhook' && t.signing === 'none').map((t) => t.id),
  };
}
