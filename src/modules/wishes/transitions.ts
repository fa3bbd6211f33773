/** Wish statuses and the moves between them (contract section 4). */
export const WISH_STATUSES = ['active', 'pending', 'fulfilled', 'cancelled', 'expired'] as const
export type WishStatus = (typeof WISH_STATUSES)[number]

const ALLOWED: Record<WishStatus, readonly WishStatus[]> = {
  active: ['pending', 'fulfilled', 'cancelled', 'expired'],
  pending: ['active', 'fulfilled', 'cancelled', 'expired'],
  fulfilled: [],
  cancelled: [],
  expired: [],
}

export function isTerminal(status: WishStatus): boolean {
  return ALLOWED[status].length === 0
}

/** Setting the current status again is always allowed (a no-op). */
export function canTransition(from: WishStatus, to: WishStatus): boolean {
  return from === to || ALLOWED[from].includes(to)
}

export function allowedTransitions(from: WishStatus): readonly WishStatus[] {
  return ALLOWED[from]
}

/** The status a reader sees: an open wish past its expires_at reads expired. */
export function effectiveStatus(stored: WishStatus, expiresAt: string | null, now: string): WishStatus {
  if (expiresAt !== null && expiresAt <= now && (stored === 'active' || stored === 'pending')) return 'expired'
  return stored
}
