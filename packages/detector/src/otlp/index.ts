export { decodeJsonRequest } from './json.js';
export { decodeProtobufRequest } from './protobuf.js';
export { OtlpDecodeError, type DecodeResult } from './errors.js';
