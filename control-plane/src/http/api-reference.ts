import swaggerUi from '@fastify/swagger-ui';
import type { RouteOptions } from 'fastify';
import type { TypedApp } from './typed-app.js';

// The interactive API reference (issue 13, item 3): @fastify/swagger-ui serves Swagger UI's own files from this
// process at /docs over the generated document (/docs/json is /openapi.json). Nothing is fetched from elsewhere: the
// page loads only its scripts, styles and icons from /docs/static, the validator badge (validator.swagger.io) is
// off, and the page's policy below forbids any other origin.

export const DOCS_PATH = '/docs';

/**
 * The reference page's policy: Swagger UI's scripts and styles are files of this origin (no inline script), its
 * stylesheet draws icons from data: URLs, and "Try it out" calls the API on this origin. Nothing may frame it.
 */
export const DOCS_PAGE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/**
 * An onRoute hook, installed before the auth plugin's check: the reference's routes (registered by the plugin,
 * which takes no route config) are declared public catalog pages with the reference's page policy, and hidden from
 * the document they show.
 */
export function declareApiReferenceRoutes(route: RouteOptions): void {
  if (route.url !== DOCS_PATH && !route.url.startsWith(`${DOCS_PATH}/`)) return;
  route.config = { ...(route.config as object), auth: 'public', cache: 'public', pagePolicy: DOCS_PAGE_POLICY };
  route.schema = { ...(route.schema ?? {}), hide: true };
}

export async function registerApiReference(app: TypedApp): Promise<void> {
  await app.register(swaggerUi, {
    routePrefix: DOCS_PATH,
    // Off: the badge would send the document to validator.swagger.io.
    validatorUrl: false,
    theme: { title: 'Ark API reference' },
    uiConfig: { deepLinking: true, docExpansion: 'list', defaultModelsExpandDepth: 0, displayRequestDuration: true },
  });
}
