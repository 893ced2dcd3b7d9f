// The browser bundle: the unmodified @scute/core, its exports on window.Scute.
import * as Scute from "@scute/core";

window.Scute = Scute;
