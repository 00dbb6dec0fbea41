export const PACKAGE_VERSION = '0.1.0';
