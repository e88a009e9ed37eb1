// The job's SSH listener: one per job, on its own port with its own host key, switched between
// execution (shells and commands in the running container), retrieval (read-only SFTP of its files)
// and closed. The SSH side (ssh2) is loaded on first use, so an idle agent never holds it in memory.
import type { AccessMode, JobContext, LiveJob } from './job-context.js';
import { hostKeys } from './job-context.js';

export class JobAccessListener {
  constructor(private readonly context: JobContext) {}

  /** Shells and commands run through `docker exec` in the container while the job is ready. */
  executionMode(job: LiveJob): AccessMode {
    return {
      kind: 'execution',
      exec: (request) => {
        const id = job.record.container_id;
        if (id === undefined || job.record.phase !== 'ready') return Promise.reject(new Error('the job is not running'));
        return this.context.runtime.exec(id, request);
      },
    };
  }

  /** Opens the job's listener in `mode`, or switches an open one to it. */
  async ensure(job: LiveJob, mode: AccessMode): Promise<void> {
    if (job.ssh !== undefined) {
      job.ssh.setMode(mode);
      return;
    }
    const record = job.record;
    if (record.ssh_port === undefined || record.launch === undefined || this.context.lifecycle.closing) return;
    const hostKey = await (await hostKeys()).loadOrCreateHostKey(this.context.store.hostKeyPath(record.job_id));
    const { JobSshServer } = await import('../access/job-ssh-server.js');
    const server = new JobSshServer({
      jobId: record.job_id,
      hostKey,
      authorizedKeys: record.launch.ssh_public_keys,
      host: this.context.settings.sshBindHost,
      port: record.ssh_port,
      mode,
      logger: this.context.logger,
    });
    await server.listen();
    job.ssh = server;
  }

  async close(job: LiveJob): Promise<void> {
    const server = job.ssh;
    job.ssh = undefined;
    await server?.close().catch(() => undefined);
  }
}
