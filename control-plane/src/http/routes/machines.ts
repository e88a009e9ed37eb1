import {
  CpuListingRequest,
  GoLiveRequest,
  IdempotencyHeaders,
  IdParams,
  Machine,
  MachineCpuListing,
  MachineGoLive,
  PAGE_LIMIT_DEFAULT,
  Page,
  PageQuery,
} from '@ark/shared';
import type { AppContext } from '../context.js';
import type { OfferVersionRecord } from '../../domain/offers/offer.js';
import { DomainError } from '../../errors.js';
import type { MachineHardwareRecord, MachineReliabilityRecord } from '../../services/hosting/index.js';
import { machineCpuListingView, machineGoLiveView, machineRentalView, machineView } from '../../views/machines.js';
import { assertOwnerOrAdmin, principalOf } from '../auth.js';
import { answerInTransaction } from '../idempotency.js';
import { fetchSize } from '../pagination.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

export function registerMachineRoutes(app: TypedApp, ctx: AppContext): void {
  const { clock, config } = ctx;
  const hosting = ctx.services.hosting;
  // Rows come with a heartbeat still buffered in this process applied: the view shows the newest.
  const machines = hosting.machines;

  app.get(
    '/api/v1/hosts/machines',
    {
      config: { auth: { scope: 'host' } },
      schema: {
        summary: 'List your machines',
        description:
          "The caller's own machines, oldest first, with manifest, go-live state, liveness, last heartbeat, network facts and current offer.",
        querystring: PageQuery,
        response: withErrors({ 200: Page(Machine) }),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const scope = `machines:${principal.accountId}`;
      const after = ctx.paginator.decode<[string, string]>(scope, request.query.cursor);
      const found = await machines.listOfOwner(principal.accountId, after, fetchSize(request.query.limit));
      const now = clock.now();
      const visible = found.slice(0, request.query.limit ?? PAGE_LIMIT_DEFAULT);
      const offers = new Map<string, OfferVersionRecord | undefined>();
      const scores = new Map<string, MachineReliabilityRecord | undefined>();
      const hardware = new Map<string, MachineHardwareRecord | undefined>();
      for (const machine of visible) {
        offers.set(machine.id, await machines.currentOffer(machine.id));
        scores.set(machine.id, await machines.reliability(machine.id));
        hardware.set(machine.id, await machines.hardware(machine.id));
      }
      return ctx.paginator.page(
        scope,
        found,
        request.query.limit,
        (machine) => [machine.createdAt, machine.id],
        (machine) => machineView(machine, offers.get(machine.id), now, config, scores.get(machine.id), hardware.get(machine.id)),
      );
    },
  );

  app.get(
    '/api/v1/hosts/machines/:id',
    {
      config: { auth: { scope: 'host', owner: 'machine' } },
      schema: {
        summary: 'Read a machine',
        description: 'Owner or admin; anyone else gets 404.',
        params: IdParams,
        response: withErrors({ 200: Machine }, 404),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const machine = await machines.find(request.params.id);
      if (!machine) throw new DomainError('NOT_FOUND');
      assertOwnerOrAdmin(principal, machine.ownerAccountId);
      return {
        ...machineView(
          machine,
          await machines.currentOffer(machine.id),
          clock.now(),
          config,
          await machines.reliability(machine.id),
          await machines.hardware(machine.id),
        ),
        current_rentals: (await machines.rentals(machine.id)).map(machineRentalView),
      };
    },
  );

  app.post(
    '/api/v1/hosts/machines/:id/go-live',
    {
      config: { auth: { scope: 'host', owner: 'machine' }, idempotent: true },
      schema: {
        summary: "Turn a machine's go-live on or off",
        description:
          'Host owner. Off takes the machine out of the listing at once (state off). On waits for its next healthy heartbeat (state waiting), ' +
          'seeding an offer at the default rate when it has none. The agent is told with an update_go_live command.',
        params: IdParams,
        headers: IdempotencyHeaders,
        body: GoLiveRequest,
        response: withErrors({ 200: MachineGoLive }, 403, 404, 409),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const result = await hosting.setGoLive(
        principal.accountId,
        request.params.id,
        request.body.go_live,
        answerInTransaction(request, reply, 200, machineGoLiveView),
      );
      return reply.code(200).send(machineGoLiveView(result));
    },
  );

  app.post(
    '/api/v1/hosts/machines/:id/cpu-listing',
    {
      config: { auth: { scope: 'host', owner: 'machine' }, idempotent: true },
      schema: {
        summary: 'List a machine as a CPU machine, or stop',
        description:
          'Host owner. A machine that reports no GPU is offered only while its host lists it as a CPU machine: offer search then shows it ' +
          'as one (no gpu_count, no model; rented whole with gpu_count 1), and quotes take it. Off takes such a machine out of the search ' +
          'at once. On a machine with GPUs it changes nothing renters see. The answer says how many GPUs the machine reports. Audited.',
        params: IdParams,
        headers: IdempotencyHeaders,
        body: CpuListingRequest,
        response: withErrors({ 200: MachineCpuListing }, 403, 404, 409),
      },
    },
    async (request, reply) => {
      const result = await hosting.setCpuListing(
        principalOf(request).accountId,
        request.params.id,
        request.body.cpu_listing,
        answerInTransaction(request, reply, 200, machineCpuListingView),
      );
      return reply.code(200).send(machineCpuListingView(result));
    },
  );
}
