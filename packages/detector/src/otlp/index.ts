export { decodeJsonRequest } from './json.js';
export { decodeProtobufRequest } from './protobuf.js';
export { encodeProtobufResponse, jsonResponse } from './response.js';
export { OtlpDecodeError, type DecodeResult } from './errors.js';
