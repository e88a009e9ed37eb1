/** The slice of a pino logger the gateway uses (Fastify's logger and pino both fit). */
export interface GatewayLogger {
  debug(detail: object, message: string): void;
  info(detail: object, message: string): void;
  warn(detail: object, message: string): void;
  error(detail: object, message: string): void;
}

export const silentLogger: GatewayLogger = { debug() {}, info() {}, warn() {}, error() {} };
