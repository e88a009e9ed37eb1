export { type ArkAnswer, type ArkApi, type ArkRequest, httpArkApi, parseAnswerBody, requestHeaders, requestTarget } from './api.js';
export { buildArkMcpServer, SERVER_NAME, SERVER_VERSION } from './server.js';
export { DEFAULT_ARK_URL, runStdio, type StdioOptions, stdioSettings } from './stdio.js';
export { ARK_TOOL_NAMES, registerArkTools } from './tools.js';
