import type { EnrollmentTokenCreated, EnrollResponse, PairingApproveResponse, PairingCreated, PairingLookupResponse } from '@ark/shared';
import type { ApprovedPairing, PairingLookup, StartedPairing } from '../services/hosting/pairing.js';

// Pairing and enrollment as the wire shows them (shared/src/http/hosts.ts). A pairing's status (the installer's
// poll) and its summary are still built by services/hosting/pairing.ts.

export const pairingCreatedView = (started: StartedPairing): PairingCreated => ({
  pairing_id: started.pairingId,
  poll_secret: started.pollSecret,
  user_code: started.userCode,
  verification_uri: started.verificationUri,
  expires_at: started.expiresAt,
  interval_s: started.intervalS,
});

export const pairingLookupView = (found: PairingLookup): PairingLookupResponse => ({ summary: found.summary, expires_at: found.expiresAt });

export const pairingApprovedView = (approved: ApprovedPairing): PairingApproveResponse => ({
  approved: true as const,
  go_live: approved.goLive,
  summary: approved.summary,
});

/** A single-use enrollment token, shown once. */
export const enrollmentTokenView = (issued: { token: string; expiresAt: Date }): EnrollmentTokenCreated => ({
  enrollment_token: issued.token,
  expires_at: issued.expiresAt.toISOString(),
});

/** An enrolled machine: its id, the control plane's public key to pin, and where its channel is. */
export const enrolledView = (machineId: string, controlPlanePublicKey: string, channelUrl: string): EnrollResponse => ({
  machine_id: machineId,
  control_plane_public_key: controlPlanePublicKey,
  channel_url: channelUrl,
});
