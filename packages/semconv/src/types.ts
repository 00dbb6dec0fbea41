export type ValuesOf<T> = T[keyof T];
