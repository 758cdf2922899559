// Who is asking: the caller as a verified token names them. Defined here, below both the layer that
// verifies tokens (auth) and the use cases that act for the caller (services), so neither imports
// the other for it.

/** The caller, as the verified token names them. */
export interface Principal {
  userId: string;
  workspaceId: string;
  /** The teams the token names the caller a member of (their slugs): the spaces they see (domain/spaces.ts). */
  teams: readonly string[];
  /** A workspace administrator, who sees every space. */
  admin: boolean;
}
