// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A full file system for tests of write failures: a 64 KiB tmpfs mounted on a temporary folder, then filled
// to the last byte. Mounting needs root (CAP_SYS_ADMIN); when it is refused, isMounted() is false and the
// test skips with reason().

#include <QDir>
#include <QString>
#include <QTemporaryDir>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

namespace qkv::test {

class FullDisk {
public:
    /// Mounts and fills the disk; `prepare(folder)` runs in between, to put files there while room is left.
    template <typename Prepare> explicit FullDisk(Prepare prepare)
    {
        if (!m_dir.isValid()) {
            m_reason = QStringLiteral("cannot create a temporary folder");
            return;
        }
        const QByteArray where = QFile::encodeName(m_dir.path());
        if (::mount("tmpfs", where.constData(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0777") != 0) {
            m_reason =
                QStringLiteral("cannot mount a tmpfs (%1)").arg(QString::fromLocal8Bit(std::strerror(errno)));
            return;
        }
        m_mounted = true;
        prepare(m_dir.path());
        const QByteArray filler = QFile::encodeName(filePath(QStringLiteral("filler")));
        const int fd = ::open(filler.constData(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const std::vector<char> block(4096, 'f');
        if (fd >= 0) {
            while (::write(fd, block.data(), block.size()) > 0) {
            }
            while (::write(fd, block.data(), 1) > 0) {
            }
            ::close(fd);
        }
    }
    FullDisk() : FullDisk([](const QString&) {}) {}
    ~FullDisk()
    {
        if (m_mounted)
            ::umount2(QFile::encodeName(m_dir.path()).constData(), MNT_DETACH);
    }
    FullDisk(const FullDisk&) = delete;
    FullDisk& operator=(const FullDisk&) = delete;

    bool isMounted() const { return m_mounted; }
    QString reason() const { return m_reason; }
    QString path() const { return m_dir.path(); }
    QString filePath(const QString& name) const { return m_dir.filePath(name); }
    /// Every name in the folder but the filler, sorted (hidden temporary files included).
    QStringList entries() const
    {
        QStringList names =
            QDir(m_dir.path())
                .entryList(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot, QDir::Name);
        names.removeAll(QStringLiteral("filler"));
        return names;
    }

private:
    QTemporaryDir m_dir;
    bool m_mounted = false;
    QString m_reason;
};

} // namespace qkv::test
