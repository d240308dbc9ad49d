//! The listening export: an accept thread and one thread per client; knows its clients so a stop
//! can wait for them (they hold the disk like a loop device does) or, when forced, disconnect them.

use std::collections::HashMap;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::address::NbdAddress;
use crate::connection::Connection;
use crate::device::BlockDevice;
use crate::error::{io as io_error, NbdError};
use crate::export::Export;
use crate::limits::{ByteBudget, WorkerSlots, CONNECTION_STACK_BYTES, SOCKET_BUFFER_BYTES};

/// How often the accept loop checks whether it should stop.
const ACCEPT_POLL: Duration = Duration::from_millis(50);

/// Everything the accept thread and the client threads share.
struct Shared {
    device: Arc<dyn BlockDevice>,
    export: Export,
    budget: ByteBudget,
    slots: WorkerSlots,
    stop: AtomicBool,
    clients: Mutex<HashMap<u64, (String, Stream)>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(stream) => Stream::Tcp(stream.try_clone()?),
            Stream::Unix(stream) => Stream::Unix(stream.try_clone()?),
        })
    }

    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(stream) => stream.set_read_timeout(timeout),
            Stream::Unix(stream) => stream.set_read_timeout(timeout),
        }
    }

    fn shutdown(&self) {
        let _ = match self {
            Stream::Tcp(stream) => stream.shutdown(Shutdown::Both),
            Stream::Unix(stream) => stream.shutdown(Shutdown::Both),
        };
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(stream) => stream.read(buf),
            Stream::Unix(stream) => stream.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(stream) => stream.write(buf),
            Stream::Unix(stream) => stream.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(stream) => stream.flush(),
            Stream::Unix(stream) => stream.flush(),
        }
    }
}

/// A running NBD export of one device.
///
/// Connected clients are kept with a description and a handle to disconnect each; every client
/// thread is joined at shutdown, so no request is still running on the device after it.
pub struct NbdServer {
    address: NbdAddress,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl NbdServer {
    /// Listens on `address` (a Unix socket is created mode 0600: whoever can connect can write the
    /// disk) and serves `device` as `export` to every client until `shut_down`.
    pub fn start(device: Arc<dyn BlockDevice>, address: &NbdAddress, export: Export) -> Result<NbdServer, NbdError> {
        export.limits.validate().map_err(NbdError::Limits)?;
        let listener = match address {
            NbdAddress::Tcp(socket) => Listener::Tcp(TcpListener::bind(socket).map_err(io_error("bind TCP"))?),
            NbdAddress::Unix(path) => {
                let listener = UnixListener::bind(path).map_err(io_error("bind Unix socket"))?;
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                    .map_err(io_error("chmod 0600 the Unix socket"))?;
                Listener::Unix(listener, path.clone())
            }
        };
        let bound = match &listener {
            Listener::Tcp(tcp) => {
                tcp.set_nonblocking(true).map_err(io_error("set the listener non-blocking"))?;
                NbdAddress::Tcp(tcp.local_addr().map_err(io_error("read the bound address"))?)
            }
            Listener::Unix(unix, _) => {
                unix.set_nonblocking(true).map_err(io_error("set the listener non-blocking"))?;
                address.clone()
            }
        };
        let shared = Arc::new(Shared {
            device,
            budget: ByteBudget::new(export.limits.max_buffered_bytes),
            slots: WorkerSlots::new(export.limits.max_request_threads),
            export,
            stop: AtomicBool::new(false),
            clients: Mutex::default(),
            threads: Mutex::default(),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("nbd-accept".into())
                .spawn(move || accept_loop(&listener, &shared))
                .map_err(io_error("spawn the accept thread"))?
        };
        Ok(NbdServer { address: bound, shared, acceptor: Some(acceptor) })
    }

    /// Where the export listens (with the port the system chose for port 0).
    #[must_use]
    pub fn address(&self) -> &NbdAddress {
        &self.address
    }

    /// One description per connected client (e.g. `NBD client 127.0.0.1:51234`).
    #[must_use]
    pub fn clients(&self) -> Vec<String> {
        let clients = self.shared.clients.lock().unwrap_or_else(PoisonError::into_inner);
        let mut names: Vec<String> = clients.values().map(|(name, _)| name.clone()).collect();
        names.sort();
        names
    }

    /// Stops accepting, disconnects every client and waits for their threads (a request in flight
    /// completes or fails; none runs afterwards).
    pub fn shut_down(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        for (_, stream) in self.shared.clients.lock().unwrap_or_else(PoisonError::into_inner).values() {
            stream.shutdown();
        }
        let threads = std::mem::take(&mut *self.shared.threads.lock().unwrap_or_else(PoisonError::into_inner));
        for thread in threads {
            let _ = thread.join();
        }
    }
}

impl Drop for NbdServer {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

fn accept_loop(listener: &Listener, shared: &Arc<Shared>) {
    let next_id = AtomicU64::new(0);
    let mut refused = 0u64;
    while !shared.stop.load(Ordering::Acquire) {
        let accepted = match listener {
            Listener::Tcp(tcp) => {
                tcp.accept().map(|(stream, peer)| (Stream::Tcp(stream), format!("NBD client {peer}")))
            }
            Listener::Unix(unix, path) => {
                unix.accept().map(|(stream, _)| (Stream::Unix(stream), format!("NBD client on {}", path.display())))
            }
        };
        match accepted {
            Ok((stream, name)) => {
                let id = next_id.fetch_add(1, Ordering::Relaxed);
                let mut threads = shared.threads.lock().unwrap_or_else(PoisonError::into_inner);
                threads.retain(|thread| !thread.is_finished());
                if threads.len() >= shared.export.limits.max_connections {
                    // Closing at once costs nothing; the client sees the server end the handshake.
                    // One line per power of two refused, so a flood does not flood the log too.
                    refused += 1;
                    if refused.is_power_of_two() {
                        eprintln!(
                            "nandlab: {name} refused, {refused} so far: {} clients are connected \
                             (the export's limit)",
                            threads.len()
                        );
                    }
                    stream.shutdown();
                    continue;
                }
                match spawn_client(id, name, stream, shared) {
                    Ok(thread) => threads.push(thread),
                    Err(err) => eprintln!("nandlab: {err}"),
                }
            }
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => thread::sleep(ACCEPT_POLL),
            Err(err) => {
                eprintln!("nandlab: NBD accept failed: {err}");
                thread::sleep(ACCEPT_POLL);
            }
        }
    }
    if let Listener::Unix(_, path) = listener {
        let _ = std::fs::remove_file(path);
    }
}

fn spawn_client(id: u64, name: String, stream: Stream, shared: &Arc<Shared>) -> Result<JoinHandle<()>, NbdError> {
    // Accepted sockets may inherit non-blocking mode; a client thread blocks.
    match &stream {
        Stream::Tcp(tcp) => {
            tcp.set_nonblocking(false).map_err(io_error("set the client socket blocking"))?;
            let _ = tcp.set_nodelay(true);
        }
        Stream::Unix(unix) => unix.set_nonblocking(false).map_err(io_error("set the client socket blocking"))?,
    }
    stream
        .set_read_timeout(Some(shared.export.limits.handshake_timeout))
        .map_err(io_error("set the handshake timeout"))?;
    let handle = stream.try_clone().map_err(io_error("clone the client socket"))?;
    let writer = stream.try_clone().map_err(io_error("clone the client socket"))?;
    let control = stream.try_clone().map_err(io_error("clone the client socket"))?;
    shared.clients.lock().unwrap_or_else(PoisonError::into_inner).insert(id, (name.clone(), handle));
    let shared = Arc::clone(shared);
    let spawned =
        thread::Builder::new().name("nbd-client".into()).stack_size(CONNECTION_STACK_BYTES).spawn(move || {
            let mut connection = Connection {
                reader: BufReader::with_capacity(SOCKET_BUFFER_BYTES, stream),
                writer: BufWriter::with_capacity(SOCKET_BUFFER_BYTES, writer),
                device: shared.device.as_ref(),
                export: &shared.export,
                budget: &shared.budget,
                slots: &shared.slots,
            };
            let served = connection.handshake().and_then(|granted| {
                if granted {
                    // An idle client that finished the handshake is a real client: no timeout now.
                    control.set_read_timeout(None).map_err(io_error("clear the handshake timeout"))?;
                    connection.transmit()?;
                }
                Ok(())
            });
            if let Err(err) = served {
                eprintln!("nandlab: {name}: {err}");
            }
            shared.clients.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        });
    spawned.map_err(io_error("spawn a client thread"))
}
