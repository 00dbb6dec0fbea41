# The resumewatch image: the detector (`resumewatch serve`), the gateway, the lab server and the lab clients.
#   docker build -t resumewatch/resumewatch:0.1.0 .
FROM node:20.19.5-bookworm-slim

# corepack's signature check is unreliable on some machines: install the pinned pnpm with npm.
RUN npm install -g pnpm@12.4.2 && npm cache clean --force

WORKDIR /app
COPY . .
RUN pnpm install --frozen-lockfile && pnpm exec tsc -b

ENV NODE_ENV=production
USER node
# OTLP/gRPC, OTLP/HTTP, /metrics of the detector; 8080 for the lab server; 8081 and 9466 for the gateway.
EXPOSE 4317 4318 9464 8080 8081 9466
CMD ["node", "packages/daemon/dist/cli.js", "serve", "--host", "0.0.0.0", "--port", "4318", "--grpc-port", "4317", "--metrics-port", "9464"]
