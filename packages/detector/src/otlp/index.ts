export { decodeJsonRequest } from './json.js';
export { decodeProtobufRequest } from './protobuf.js';
export { OtlpDecodeError, type DecodeResult } from './errors.js';
export { encodeProtobufResponse, jsonResponse, rejectionMessage, varint as protobufVarint } from './response.js';
