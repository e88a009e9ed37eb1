export { AUTHORIZED_KEYS_MAX, checkPublicKey, type PublicKeyVerdict, parseAuthorizedKeys } from './authorized-keys.js';
export { fingerprintOf, generateHostKey, type HostKey, hostKeyFromPrivate, loadOrCreateHostKey, removeHostKey } from './host-key.js';
export {
  type AccessLogger,
  type AccessMode,
  type ExecuteInContainer,
  JobSshServer,
  type JobSshServerOptions,
  SSH_AUTH_TIMEOUT_MS_DEFAULT,
  SSH_MAX_AUTH_ATTEMPTS_DEFAULT,
  SSH_MAX_CONNECTIONS_DEFAULT,
  SSH_MAX_SESSIONS_PER_CONNECTION_DEFAULT,
} from './job-ssh-server.js';
export { type ReadOnlySftpOptions, SFTP_MAX_OPEN_HANDLES, SFTP_MAX_READ_BYTES, serveReadOnlySftp, virtualPath } from './sftp-read-only.js';
