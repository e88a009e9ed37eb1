// One SSH listener per job, served by the agent itself (no sshd in the image). While the job runs,
// commands and shells go through `docker exec` into its container; during the retrieval window after
// a stop, only read-only SFTP over the job's volume is offered.
import { finished } from 'node:stream/promises';
import type { Connection, ParsedKey, PseudoTtyInfo, Server as SshServer, ServerChannel, Session } from 'ssh2';
import ssh2 from 'ssh2';
import type { ExecRequest, ExecSession } from '../runtime/container-runtime.js';
import { checkPublicKey, parseAuthorizedKeys } from './authorized-keys.js';
import type { HostKey } from './host-key.js';
import { serveReadOnlySftp } from './sftp-read-only.js';

// ssh2 is CommonJS: plain Node (the bundled agent) exposes only its default export to ESM.
const { Server } = ssh2;

export type ExecuteInContainer = (request: ExecRequest) => Promise<ExecSession>;

export type AccessMode =
  | { kind: 'execution'; exec: ExecuteInContainer }
  | { kind: 'retrieval'; root: string }
  /** Listening, but nothing is offered (between the end of execution and the start of retrieval). */
  | { kind: 'closed' };

/** Pino-compatible subset. */
export type AccessLogger = {
  info(detail: Record<string, unknown>, message: string): void;
  warn(detail: Record<string, unknown>, message: string): void;
};

export type JobSshServerOptions = {
  jobId: string;
  hostKey: HostKey;
  /** OpenSSH public key lines of the renter. */
  authorizedKeys: readonly string[];
  /** 0.0.0.0 in production; 127.0.0.1 in tests. */
  host: string;
  port: number;
  mode: AccessMode;
  logger?: AccessLogger;
  maxConnections?: number;
  maxSessionsPerConnection?: number;
  /** A connection that has not authenticated by then is dropped. */
  authTimeoutMs?: number;
  maxAuthAttempts?: number;
};

export const SSH_MAX_CONNECTIONS_DEFAULT = 16;
export const SSH_MAX_SESSIONS_PER_CONNECTION_DEFAULT = 8;
export const SSH_AUTH_TIMEOUT_MS_DEFAULT = 30_000;
export const SSH_MAX_AUTH_ATTEMPTS_DEFAULT = 10;
/** Environment variables a client may set per session (`SendEnv`). */
const SESSION_ENV_MAX = 32;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const ENV_VALUE_MAX_CHARS = 4096;

const silentLogger: AccessLogger = { info: () => undefined, warn: () => undefined };

function clampSize(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isInteger(value) && value > 0 && value <= 10_000 ? value : fallback;
}

export class JobSshServer {
  private readonly options: JobSshServerOptions;
  private readonly keys: ParsedKey[];
  private readonly logger: AccessLogger;
  private readonly server: SshServer;
  /** Open connections, with the mode each authenticated under (undefined while in the handshake). */
  private readonly connections = new Map<Connection, AccessMode | undefined>();
  private mode: AccessMode;
  private listening = false;

  constructor(options: JobSshServerOptions) {
    this.options = options;
    this.keys = parseAuthorizedKeys(options.authorizedKeys);
    this.logger = options.logger ?? silentLogger;
    this.mode = options.mode;
    this.server = new Server({ hostKeys: [options.hostKey.privateKey], ident: 'ArkAgent' }, (client) => this.onConnection(client));
    this.server.on('error', (error: Error) => this.logger.warn({ job_id: options.jobId, error: error.message }, 'ssh listener error'));
  }

  get port(): number {
    return this.options.port;
  }

  get fingerprint(): string {
    return this.options.hostKey.fingerprint;
  }

  get modeKind(): AccessMode['kind'] {
    return this.mode.kind;
  }

  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      this.server.once('error', onError);
      this.server.listen(this.options.port, this.options.host, () => {
        this.server.removeListener('error', onError);
        this.listening = true;
        resolve();
      });
    });
  }

  /**
   * Switches what the listener offers. Connections authenticated under another mode are closed;
   * those still in their handshake go on and authenticate under the new one.
   */
  setMode(mode: AccessMode): void {
    this.mode = mode;
    for (const [client, authenticatedMode] of this.connections) {
      if (authenticatedMode !== undefined && authenticatedMode !== mode) client.end();
    }
  }

  async close(): Promise<void> {
    for (const client of this.connections.keys()) client.end();
    if (!this.listening) return;
    this.listening = false;
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private onConnection(client: Connection): void {
    const jobId = this.options.jobId;
    const maxConnections = this.options.maxConnections ?? SSH_MAX_CONNECTIONS_DEFAULT;
    // Errors on a client (resets, protocol garbage) concern that client only.
    client.on('error', () => undefined);
    if (this.connections.size >= maxConnections) {
      client.end();
      return;
    }
    this.connections.set(client, undefined);
    client.once('close', () => this.connections.delete(client));
    const authTimer = setTimeout(() => client.end(), this.options.authTimeoutMs ?? SSH_AUTH_TIMEOUT_MS_DEFAULT);
    let attempts = 0;
    const maxAttempts = this.options.maxAuthAttempts ?? SSH_MAX_AUTH_ATTEMPTS_DEFAULT;

    client.on('authentication', (context) => {
      attempts += 1;
      if (attempts > maxAttempts) {
        context.reject();
        client.end();
        return;
      }
      if (context.method !== 'publickey' || this.mode.kind === 'closed') {
        context.reject(['publickey']);
        return;
      }
      if (checkPublicKey(this.keys, context) === 'accept') {
        // Only the signed attempt authenticates; the unsigned one merely asks whether the key would do.
        if (context.signature !== undefined) this.connections.set(client, this.mode);
        context.accept();
        return;
      }
      if (context.signature !== undefined) this.logger.info({ job_id: jobId, user: context.username.slice(0, 64) }, 'ssh key refused');
      context.reject(['publickey']);
    });

    client.on('ready', () => {
      clearTimeout(authTimer);
      let sessions = 0;
      client.on('session', (accept, reject) => {
        if (sessions >= (this.options.maxSessionsPerConnection ?? SSH_MAX_SESSIONS_PER_CONNECTION_DEFAULT)) {
          reject();
          return;
        }
        sessions += 1;
        const session = accept();
        session.once('close', () => {
          sessions -= 1;
        });
        this.onSession(session);
      });
      // No forwarding of any kind: the job's ports are published by Docker, not tunnelled here.
      client.on('tcpip', (_accept, reject) => reject());
      client.on('request', (_accept, reject) => reject?.());
    });
    client.once('close', () => clearTimeout(authTimer));
  }

  private onSession(session: Session): void {
    let pty: PseudoTtyInfo | undefined;
    const env: string[] = [];
    let active: ExecSession | undefined;

    session.on('pty', (accept, reject, info) => {
      if (this.mode.kind !== 'execution') {
        reject?.();
        return;
      }
      pty = info;
      accept?.();
    });
    session.on('window-change', (accept, _reject, info) => {
      if (pty !== undefined) pty = { ...pty, rows: info.rows, cols: info.cols };
      void active?.resize(clampSize(info.rows, 24), clampSize(info.cols, 80));
      accept?.();
    });
    session.on('env', (accept, reject, info) => {
      if (env.length >= SESSION_ENV_MAX || !ENV_NAME.test(info.key) || info.val.length > ENV_VALUE_MAX_CHARS) {
        reject?.();
        return;
      }
      env.push(`${info.key}=${info.val}`);
      accept?.();
    });
    session.on('exec', (accept, reject, info) => {
      const mode = this.mode;
      if (mode.kind !== 'execution' || active !== undefined) {
        reject?.();
        return;
      }
      const channel = accept();
      void this.run(channel, mode, ['/bin/sh', '-c', info.command], pty, env, (session) => {
        active = session;
      });
    });
    session.on('shell', (accept, reject) => {
      const mode = this.mode;
      if (mode.kind !== 'execution' || active !== undefined) {
        reject?.();
        return;
      }
      const channel = accept();
      // A shell always gets a terminal, even when the client asked for none.
      const terminal = pty ?? ({ term: 'xterm', rows: 24, cols: 80, width: 0, height: 0, modes: {} } as PseudoTtyInfo);
      void this.run(channel, mode, ['/bin/sh'], terminal, env, (session) => {
        active = session;
      });
    });
    session.on('sftp', (accept, reject) => {
      const mode = this.mode;
      if (mode.kind !== 'retrieval') {
        reject?.();
        return;
      }
      const sftp = accept();
      serveReadOnlySftp(sftp, {
        root: mode.root,
        onError: (error) => this.logger.warn({ job_id: this.options.jobId, error: String(error).slice(0, 300) }, 'sftp request failed'),
      }).catch((error: unknown) => {
        this.logger.warn({ job_id: this.options.jobId, error: String(error).slice(0, 300) }, 'sftp session failed');
        sftp.end();
      });
    });
    session.on('subsystem', (_accept, reject) => reject?.());
    session.on('auth-agent', (_accept, reject) => reject?.());
    session.on('x11', (_accept, reject) => reject?.());
    session.on('signal', (accept) => accept?.());
  }

  private async run(
    channel: ServerChannel,
    mode: Extract<AccessMode, { kind: 'execution' }>,
    command: string[],
    pty: PseudoTtyInfo | undefined,
    sessionEnv: readonly string[],
    onStarted: (session: ExecSession) => void,
  ): Promise<void> {
    const tty = pty !== undefined;
    const env = [...sessionEnv];
    if (tty) env.push(`TERM=${/^[A-Za-z0-9._+-]{1,64}$/.test(pty.term) ? pty.term : 'xterm'}`);
    let session: ExecSession;
    try {
      session = await mode.exec({
        command,
        tty,
        env,
        ...(tty ? { rows: clampSize(pty.rows, 24), cols: clampSize(pty.cols, 80) } : {}),
      });
    } catch (error) {
      this.logger.warn({ job_id: this.options.jobId, error: String(error).slice(0, 300) }, 'docker exec failed');
      channel.stderr.write('ark-agent: the job container cannot run commands right now\r\n');
      channel.exit(255);
      channel.end();
      return;
    }
    onStarted(session);
    channel.on('error', () => undefined);
    channel.pipe(session.stdin);
    session.stdout.pipe(channel, { end: false });
    session.stderr.pipe(channel.stderr, { end: false });
    channel.once('close', () => session.close());
    const code = await session.exited;
    await Promise.all([finished(session.stdout).catch(() => undefined), finished(session.stderr).catch(() => undefined)]);
    if (channel.destroyed) return;
    channel.exit(code ?? 255);
    channel.end();
  }
}
