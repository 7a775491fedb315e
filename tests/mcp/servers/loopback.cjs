// Preloaded with `node --require` so that a server calling listen(port) binds to 127.0.0.1
// only: the tests never open a port on other interfaces, and the server stays unmodified.
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const portOnly = typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]));
  if (portOnly && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
